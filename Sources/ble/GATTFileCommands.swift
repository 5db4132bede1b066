import BLE
import BLEFiles
import Foundation

/// Reads a device description file; a file that cannot be read or is not a valid description fails with
/// `FILE: $.path: reason (line L, column C)`.
func loadDescription(_ path: String) throws -> GATTDeviceDescription {
    let data: Data
    do {
        data = try Data(contentsOf: URL(fileURLWithPath: path))
    } catch {
        throw CommandFailure.failed("\(path): cannot be read (\(error.localizedDescription))")
    }
    do {
        return try GATTDeviceDescription(json: [UInt8](data))
    } catch {
        throw CommandFailure.failed("\(path): \(error)")
    }
}

/// `ble serve --gatt FILE` and `ble serve --replay CAPTURE`: serves the described device, prints its table, then what
/// centrals do, until interrupted.
func serveDescription(_ description: GATTDeviceDescription, from path: String, name: String?, options: HostOptions, security: SecurityOptions,
                      runFor: Double) async throws {
    var description = description
    if let name {
        description.advertising.name = name
        description.name = name
    }
    let json = options.json
    let shownName = description.advertising.name ?? description.name ?? "swift-ble"
    try await options.withPeripheralManager(deviceName: shownName, security: security.configuration(for: try options.spec())) { manager in
        await manager.setPairingAgent(CommandLineAgent(passkey: security.passkey, json: json, printsPasskeys: false))
        let requests = await manager.requests()
        let events = await manager.centralEvents()
        let watchers = [
            Task {
                for await request in requests {
                    if let entry = request.logEntry { emit(json, entry.text, entry.fields) }
                }
            },
            Task {
                for await event in events {
                    let entry = event.logEntry
                    emit(json, entry.text, entry.fields)
                }
            },
        ]
        defer { for w in watchers { w.cancel() } }
        let device = try await during("serving \(path)") { try await manager.serve(description) }
        let address = await manager.address?.address.description ?? "?"
        emitTable(await manager.database, json: json)
        let services = description.advertising.serviceUUIDs.map(\.description)
        let timers = description.services.flatMap(\.characteristics).filter { $0.notify != nil }.count
        emit(json, "serving '\(shownName)' from \(path) on \(options.hci) as \(address), advertising services \(services.joined(separator: ", "))\(timers > 0 ? ", \(timers) notify timer(s)" : "")",
             ["event": "serving", "name": .string(shownName), "address": .string(address), "file": .string(path),
              "services": .array(services.map(JSONValue.string)), "notify_timers": .int(timers)])
        do {
            if runFor > 0 {
                try await Task.sleep(for: .seconds(runFor))
            } else {
                while true { try await Task.sleep(for: .seconds(3600)) }
            }
        } catch {
            await device.stop()
            throw error
        }
        await device.stop()
    }
}

/// What `ble explore --save` learns of one value while reading it: the value, or the error, and the security it needed.
struct SavedRead {
    var value: [UInt8] = []
    var readError: ATTErrorCode?
    var permissions: GATTPermissions = .readable
    var shown: Result<[UInt8], GATTError>?
}

/// Reads one attribute for a clone: a security refusal (Insufficient Authentication or Encryption, Encryption Key Size
/// Too Short) is recorded as the permission it shows, then, unless `pairs` is false, the link is paired and the read
/// tried again (a second Insufficient Authentication: an authenticated key is needed); Read Not Permitted drops the
/// read permission; any other ATT error is kept as the error the clone answers.
func readForClone(_ session: ClientSession, pairs: Bool, _ read: () async throws -> [UInt8]) async throws -> SavedRead {
    var saved = SavedRead()
    func attempt() async throws -> Result<[UInt8], GATTError> {
        do { return .success(try await read()) } catch let error as GATTError {
            guard error.code.attError != nil else { throw error }
            return .failure(error)
        }
    }
    var result = try await attempt()
    if case .failure(let error) = result, let code = error.code.attError,
       [ATTErrorCode.insufficientAuthentication, .insufficientEncryption, .encryptionKeySizeTooShort].contains(code) {
        saved.permissions.insert(.readEncryptionRequired)
        if pairs, (try? await session.peripheral.pair()) != nil {
            result = try await attempt()
            if case .failure(let again) = result, again.code.attError == .insufficientAuthentication {
                saved.permissions.insert(.readAuthenticationRequired)
            }
        }
    }
    saved.shown = result
    switch result {
    case .success(let value): saved.value = value
    case .failure(let error):
        guard let code = error.code.attError else { break }
        if code == .readNotPermitted {
            saved.permissions.remove(.readable)
        } else if ![ATTErrorCode.insufficientAuthentication, .insufficientEncryption, .encryptionKeySizeTooShort].contains(code) {
            saved.readError = code
        }
    }
    return saved
}

/// Writes a description as `ble explore --save` does.
func writeDescription(_ description: GATTDeviceDescription, to path: String) throws {
    do {
        try Data(description.jsonText().utf8).write(to: URL(fileURLWithPath: path))
    } catch {
        throw CommandFailure.failed("\(path): cannot be written (\(error.localizedDescription))")
    }
}

/// `ble serve --replay CAPTURE`: what the capture shows of one device (`peer`, or the first it connected to), with a
/// line saying how much of it the capture shows.
func replayedDescription(_ path: String, peer: String?, json: Bool) throws -> GATTDeviceDescription {
    let bytes: [UInt8]
    do {
        bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
    } catch {
        throw CommandFailure.failed("\(path): cannot be read (\(error.localizedDescription))")
    }
    let capture: GATTCapture
    do {
        capture = try GATTCapture(btsnoop: bytes)
    } catch {
        throw CommandFailure.failed("\(path): \(error.reason)")
    }
    let candidates = capture.servers.filter { !$0.services.isEmpty }
    let server: GATTCapture.Server
    if let peer {
        guard let found = capture.servers.first(where: { $0.address.address.description.caseInsensitiveCompare(peer) == .orderedSame }) else {
            let known = capture.servers.map(\.address.address.description).joined(separator: ", ")
            throw CommandFailure.notFound("\(path): no connection to \(peer) in the capture (it connected to: \(known.isEmpty ? "nothing" : known))")
        }
        server = found
    } else {
        guard let first = candidates.first else {
            throw CommandFailure.notFound("\(path): the capture shows no GATT service of any device (was it made while a client discovered one?)")
        }
        server = first
    }
    let description = server.deviceDescription()
    let characteristics = description.services.flatMap(\.characteristics)
    let unseen = characteristics.filter { $0.readError == GATTCapture.Server.unseenValueError }.count
    let refused = characteristics.filter { $0.readError != nil && $0.readError != GATTCapture.Server.unseenValueError }.count
    let timers = characteristics.filter { $0.notify != nil }.count
    emit(json, "replaying \(server.address.address) from \(path): \(description.services.count) services, \(characteristics.count) characteristics; "
         + "\(refused) value(s) refused as the device refused them, "
         + "\(unseen) readable value(s) not in the capture (answered Read Not Permitted), \(timers) notification sequence(s)"
         + (capture.skipped.isEmpty ? "" : "; \(capture.skipped.count) record(s) of the capture skipped (\(capture.skipped.first?.description ?? ""))"),
         ["event": "replay", "peer": .string(server.address.address.description), "capture": .string(path),
          "services": .int(description.services.count), "characteristics": .int(characteristics.count),
          "unseen_values": .int(unseen), "refused_values": .int(refused), "notification_sequences": .int(timers),
          "skipped_records": .int(capture.skipped.count)])
    return description
}
