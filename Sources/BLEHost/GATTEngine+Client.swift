import BLEProtocols
import BLEWire

/// GATT client procedures. Core 5.4, Vol 3, Part G, 4.
extension GATTEngine {
    /// Exchanges MTUs (the client asks for ``preferredMTU``); returns the effective ATT_MTU.
    @discardableResult
    public func exchangeMTU(_ handle: UInt16) async throws -> Int {
        guard case .exchangeMTUResponse(let r) = try await request(.exchangeMTURequest(.init(mtu: UInt16(preferredMTU))), on: handle) else {
            throw GATTError(.malformedResponse, "MTU exchange")
        }
        links[handle]?.server.negotiated(mtu: min(preferredMTU, max(ATT.defaultLEMTU, Int(r.mtu))))
        return mtu(handle)
    }

    /// Discovers all primary services, or those of `uuid`.
    public func discoverPrimaryServices(_ handle: UInt16, uuid: BluetoothUUID? = nil) async throws -> [GATTService] {
        var services: [GATTService] = []
        var start: UInt16 = 1
        while true {
            let entries: [(UInt16, UInt16, BluetoothUUID)]
            do {
                if let uuid, let short = uuid.uint16 {
                    guard case .findByTypeValueResponse(let r) = try await request(
                        .findByTypeValueRequest(.init(range: .init(start: start, end: 0xFFFF), type: 0x2800,
                                                      value: [UInt8(truncatingIfNeeded: short), UInt8(short >> 8)])), on: handle)
                    else { throw GATTError(.malformedResponse, "service discovery") }
                    entries = r.handles.map { ($0.start, $0.end, uuid) }
                } else if let uuid {
                    guard case .findByTypeValueResponse(let r) = try await request(
                        .findByTypeValueRequest(.init(range: .init(start: start, end: 0xFFFF), type: 0x2800, value: uuid.wireBytes128)), on: handle)
                    else { throw GATTError(.malformedResponse, "service discovery") }
                    entries = r.handles.map { ($0.start, $0.end, uuid) }
                } else {
                    guard case .readByGroupTypeResponse(let r) = try await request(
                        .readByGroupTypeRequest(.init(range: .init(start: start, end: 0xFFFF), type: 0x2800)), on: handle)
                    else { throw GATTError(.malformedResponse, "service discovery") }
                    entries = try r.entries.map { e in
                        do { return (e.handle, e.endGroupHandle, try BluetoothUUID(littleEndian: e.value)) }
                        catch { throw GATTError(.malformedResponse, "service UUID of \(e.value.count) byte(s)") }
                    }
                }
            } catch let error as GATTError {
                if case .att(.attributeNotFound, _) = error.kind { break }
                throw error
            }
            var last = start
            for (s, e, u) in entries {
                // Handles must move forward and groups must not be inverted. Core 5.4, Vol 3, Part G, 4.4.1.
                guard s >= start, e >= s, s >= last else { throw GATTError(.malformedResponse, "service handles go backwards") }
                services.append(GATTService(uuid: u, isPrimary: true, startHandle: s, endHandle: e))
                last = e
            }
            guard !entries.isEmpty, last < 0xFFFF else { break }
            start = last + 1
        }
        return services
    }

    /// Discovers the characteristics of `service` (all, or those of `uuid`).
    public func discoverCharacteristics(_ handle: UInt16, of service: GATTService, uuid: BluetoothUUID? = nil) async throws -> [GATTCharacteristic] {
        var found: [GATTCharacteristic] = []
        var start = service.startHandle
        while start <= service.endHandle {
            let response: ATTPDU
            do {
                response = try await request(.readByTypeRequest(.init(range: .init(start: start, end: service.endHandle), type: 0x2803)), on: handle)
            } catch let error as GATTError {
                if case .att(.attributeNotFound, _) = error.kind { break }
                throw error
            }
            guard case .readByTypeResponse(let r) = response else { throw GATTError(.malformedResponse, "characteristic discovery") }
            var last = start
            for e in r.entries {
                guard e.handle >= start, e.handle <= service.endHandle, e.value.count == 5 || e.value.count == 19 else {
                    throw GATTError(.malformedResponse, "characteristic declaration at 0x\(String(e.handle, radix: 16))")
                }
                let valueHandle = UInt16(e.value[1]) | UInt16(e.value[2]) << 8
                guard valueHandle > e.handle, valueHandle <= service.endHandle else {
                    throw GATTError(.malformedResponse, "value handle 0x\(String(valueHandle, radix: 16)) outside its service")
                }
                let uuid128 = Array(e.value[3...])
                let characteristic = GATTCharacteristic(
                    uuid: try BluetoothUUID(littleEndian: uuid128), properties: GATTCharacteristicProperties(rawValue: e.value[0]),
                    declarationHandle: e.handle, valueHandle: valueHandle, endHandle: service.endHandle)
                if let previous = found.indices.last { found[previous].endHandle = e.handle - 1 }
                found.append(characteristic)
                last = e.handle
            }
            guard last < service.endHandle else { break }
            start = last + 1
        }
        if let uuid { return found.filter { $0.uuid == uuid } }
        return found
    }

    /// Discovers the descriptors of `characteristic`.
    public func discoverDescriptors(_ handle: UInt16, of characteristic: GATTCharacteristic) async throws -> [GATTDescriptor] {
        var found: [GATTDescriptor] = []
        var start = characteristic.valueHandle + 1
        while start <= characteristic.endHandle, start > characteristic.valueHandle {
            let response: ATTPDU
            do {
                response = try await request(.findInformationRequest(.init(range: .init(start: start, end: characteristic.endHandle))), on: handle)
            } catch let error as GATTError {
                if case .att(.attributeNotFound, _) = error.kind { break }
                throw error
            }
            guard case .findInformationResponse(let r) = response else { throw GATTError(.malformedResponse, "descriptor discovery") }
            var last = start
            for e in r.entries {
                guard e.handle >= start, e.handle <= characteristic.endHandle else { throw GATTError(.malformedResponse, "descriptor handles go backwards") }
                found.append(GATTDescriptor(uuid: e.type, handle: e.handle))
                last = e.handle
            }
            guard last < characteristic.endHandle else { break }
            start = last + 1
        }
        return found
    }

    /// Discovers the services a service includes. Core 5.4, Vol 3, Part G, 4.5.1.
    public func discoverIncludedServices(_ handle: UInt16, of service: GATTService) async throws -> [GATTService] {
        var found: [GATTService] = []
        var start = service.startHandle
        while start <= service.endHandle {
            let response: ATTPDU
            do {
                response = try await request(.readByTypeRequest(.init(range: .init(start: start, end: service.endHandle), type: 0x2802)), on: handle)
            } catch let error as GATTError {
                if case .att(.attributeNotFound, _) = error.kind { break }
                throw error
            }
            guard case .readByTypeResponse(let r) = response else { throw GATTError(.malformedResponse, "included service discovery") }
            var last = start
            for e in r.entries {
                guard e.handle >= start, e.value.count == 4 || e.value.count == 6 else {
                    throw GATTError(.malformedResponse, "include declaration at 0x\(String(e.handle, radix: 16))")
                }
                let s = UInt16(e.value[0]) | UInt16(e.value[1]) << 8
                let end = UInt16(e.value[2]) | UInt16(e.value[3]) << 8
                guard end >= s else { throw GATTError(.malformedResponse, "included service range is inverted") }
                let uuid: BluetoothUUID
                if e.value.count == 6 {
                    uuid = BluetoothUUID(UInt16(e.value[4]) | UInt16(e.value[5]) << 8)
                } else {
                    // A 128-bit included service UUID is read from its declaration.
                    guard case .readResponse(let v) = try await request(.readRequest(.init(handle: s)), on: handle), v.value.count == 16 else {
                        throw GATTError(.malformedResponse, "included service declaration at 0x\(String(s, radix: 16))")
                    }
                    uuid = try BluetoothUUID(littleEndian: v.value)
                }
                found.append(GATTService(uuid: uuid, isPrimary: false, startHandle: s, endHandle: end))
                last = e.handle
            }
            guard last < service.endHandle else { break }
            start = last + 1
        }
        return found
    }

    /// Reads the values of characteristics of type `uuid` in `range` without discovering them (Read Using
    /// Characteristic UUID). Core 5.4, Vol 3, Part G, 4.8.2.
    public func read(_ handle: UInt16, byType uuid: BluetoothUUID, in range: ClosedRange<UInt16> = 1...0xFFFF) async throws -> [(handle: UInt16, value: [UInt8])] {
        guard case .readByTypeResponse(let r) = try await request(.readByTypeRequest(.init(range: .init(start: range.lowerBound, end: range.upperBound), type: uuid)), on: handle)
        else { throw GATTError(.malformedResponse, "read by type") }
        return r.entries.map { ($0.handle, $0.value) }
    }

    /// Reads several values in one request (Read Multiple Variable Length Values, each value whole up to the MTU).
    /// Core 5.4, Vol 3, Part G, 4.8.5.
    public func readMultiple(_ handle: UInt16, attributes: [UInt16]) async throws -> [[UInt8]] {
        guard attributes.count >= 2 else {
            var values: [[UInt8]] = []
            for attribute in attributes { values.append(try await read(handle, attribute: attribute)) }
            return values
        }
        guard case .readMultipleVariableResponse(let r) = try await request(.readMultipleVariableRequest(.init(handles: attributes)), on: handle)
        else { throw GATTError(.malformedResponse, "read multiple variable") }
        return r.entries.map(\.value)
    }

    /// Reads a value; long values are read whole with Read Blob. Core 5.4, Vol 3, Part G, 4.8.1 and 4.8.3.
    public func read(_ handle: UInt16, attribute: UInt16) async throws -> [UInt8] {
        guard case .readResponse(let first) = try await request(.readRequest(.init(handle: attribute)), on: handle) else {
            throw GATTError(.malformedResponse, "read")
        }
        var value = first.value
        var chunk = first.value.count
        while chunk == mtu(handle) - 1, value.count < ATT.maximumAttributeValueLength {
            do {
                guard case .readBlobResponse(let next) = try await request(.readBlobRequest(.init(handle: attribute, offset: UInt16(value.count))), on: handle)
                else { throw GATTError(.malformedResponse, "read blob") }
                value += next.value
                chunk = next.value.count
            } catch let error as GATTError {
                if case .att(.attributeNotLong, _) = error.kind { break }
                if case .att(.invalidOffset, _) = error.kind { break }
                throw error
            }
        }
        return value
    }

    /// Writes a value with a Write Request, or with prepared writes (reliably: each echo is checked) when it does
    /// not fit one PDU. Core 5.4, Vol 3, Part G, 4.9.3 and 4.9.4.
    public func write(_ handle: UInt16, attribute: UInt16, value: [UInt8]) async throws {
        guard value.count <= ATT.maximumAttributeValueLength else { throw GATTError(.invalidValueLength, "\(value.count) bytes exceed 512") }
        if value.count <= ATT.maximumWriteValueLength(mtu: mtu(handle)) {
            guard case .writeResponse = try await request(.writeRequest(.init(handle: attribute, value: value)), on: handle) else {
                throw GATTError(.malformedResponse, "write")
            }
            return
        }
        let size = ATT.maximumPrepareWriteValueLength(mtu: mtu(handle))
        var offset = 0
        do {
            while offset < value.count {
                let part = Array(value[offset..<min(value.count, offset + size)])
                let sent = ATTPrepareWriteRequest(handle: attribute, offset: UInt16(offset), value: part)
                guard case .prepareWriteResponse(let echo) = try await request(.prepareWriteRequest(sent), on: handle),
                      echo.handle == sent.handle, echo.offset == sent.offset, echo.value == sent.value else {
                    throw GATTError(.malformedResponse, "prepared write echo differs at offset \(offset)")
                }
                offset += part.count
            }
        } catch {
            _ = try? await request(.executeWriteRequest(.init(commit: false)), on: handle)
            throw error
        }
        guard case .executeWriteResponse = try await request(.executeWriteRequest(.init(commit: true)), on: handle) else {
            throw GATTError(.malformedResponse, "execute write")
        }
    }

    /// Writes without response (a Write Command of at most ATT_MTU − 3 bytes).
    public func writeWithoutResponse(_ handle: UInt16, attribute: UInt16, value: [UInt8]) async throws {
        guard value.count <= ATT.maximumWriteValueLength(mtu: mtu(handle)) else {
            throw GATTError(.invalidValueLength, "\(value.count) bytes exceed ATT_MTU − 3 = \(ATT.maximumWriteValueLength(mtu: mtu(handle)))")
        }
        try await command(.writeCommand(.init(handle: attribute, value: value)), on: handle)
    }

    /// Subscribes to notifications (or indications) of a characteristic by writing its CCCD; the stream delivers
    /// the values and finishes when the link goes down.
    public func subscribe(_ handle: UInt16, valueHandle: UInt16, cccdHandle: UInt16, indications: Bool = false) async throws -> AsyncStream<[UInt8]> {
        let (stream, continuation) = AsyncStream.makeStream(of: [UInt8].self)
        let id = nextSubscriber
        nextSubscriber += 1
        try await ensureAttached(handle)
        links[handle]?.subscribers[valueHandle, default: [:]][id] = continuation
        try await write(handle, attribute: cccdHandle, value: indications ? [0x02, 0x00] : [0x01, 0x00])
        return stream
    }

    /// Stops notifications: writes 0 to the CCCD and finishes the streams.
    public func unsubscribe(_ handle: UInt16, valueHandle: UInt16, cccdHandle: UInt16) async throws {
        for s in links[handle]?.subscribers.removeValue(forKey: valueHandle)?.values ?? [:].values { s.finish() }
        try await write(handle, attribute: cccdHandle, value: [0x00, 0x00])
    }
}

/// GATT server operations.
extension GATTEngine {
    /// Changes a value in the local database and notifies (or indicates, when that is what a client subscribed to)
    /// every subscribed client, or only those on `links` (like `updateValue(_:for:onSubscribedCentrals:)`). Returns the
    /// connection handles that were sent the value. Indications wait for each client's confirmation, and one
    /// indication at a time goes to a client (concurrent calls queue). A link that goes down or times out meanwhile is
    /// left out of the result; the call throws only when no link could be sent the value and one of them failed.
    @discardableResult
    public func updateValue(_ value: [UInt8], for valueHandle: UInt16, onLinks only: Set<UInt16>? = nil) async throws -> [UInt16] {
        database.setValue(value, for: valueHandle)
        var sent: [UInt16] = []
        var failure: (any Error)?
        for handle in links.keys.sorted() where only?.contains(handle) ?? true {
            guard let server = links[handle]?.server else { continue }
            let payload = Array(value.prefix(ATT.maximumNotificationValueLength(mtu: server.mtu)))
            do {
                if server.isSubscribed(valueHandle) {
                    try await command(.handleValueNotification(.init(handle: valueHandle, value: payload)), on: handle)
                    sent.append(handle)
                } else if server.isSubscribed(valueHandle, indications: true) {
                    try await indicate(payload, valueHandle: valueHandle, on: handle)
                    sent.append(handle)
                }
            } catch {
                failure = failure ?? error
            }
        }
        if sent.isEmpty, let failure { throw failure }
        return sent
    }

    /// Sends one indication on a link once the previous one is confirmed, and waits for its confirmation.
    private func indicate(_ payload: [UInt8], valueHandle: UInt16, on handle: UInt16) async throws {
        guard let generation = links[handle]?.generation else { throw GATTError(.disconnected, "the link went down") }
        func sameLink() -> Bool { links[handle]?.generation == generation }
        while sameLink(), links[handle]?.indicating == true {
            await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in links[handle]?.indicationQueue.append(waiter) }
        }
        guard sameLink() else { throw GATTError(.disconnected, "the link went down") }
        links[handle]?.indicating = true
        defer {
            if sameLink() {
                links[handle]?.indicating = false
                if let next = links[handle]?.indicationQueue.first {
                    links[handle]?.indicationQueue.removeFirst()
                    next.resume()
                }
            }
        }
        try await command(.handleValueIndication(.init(handle: valueHandle, value: payload)), on: handle)
        // The confirmation has the ATT transaction deadline; without it the link is closed.
        let timeout = transactionTimeout
        let timer = Task { [weak self] in
            try? await Task.sleep(for: timeout)
            guard !Task.isCancelled else { return }
            await self?.indicationTimedOut(handle)
        }
        defer { timer.cancel() }
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            if sameLink() {
                links[handle]?.indicationWaiter = continuation
            } else {
                continuation.resume(throwing: GATTError(.disconnected, "the link went down"))
            }
        }
    }

    func indicationTimedOut(_ handle: UInt16) async {
        guard let waiter = links[handle]?.indicationWaiter else { return }
        links[handle]?.indicationWaiter = nil
        waiter.resume(throwing: GATTError(.timeout, "no confirmation of an indication within \(transactionTimeout); closing the link"))
        try? await host.disconnect(handle)
    }

    /// Whether every link has room to send now (the ready signal behind
    /// `peripheralManagerIsReady(toUpdateSubscribers:)`).
    public func isReadyToUpdateSubscribers() async -> Bool {
        for handle in links.keys where !(await host.isReadyToSend(handle)) { return false }
        return true
    }

    /// Whether a client on `handle` subscribed to `valueHandle`.
    public func isSubscribed(_ handle: UInt16, valueHandle: UInt16) -> Bool {
        guard let s = links[handle]?.server else { return false }
        return s.isSubscribed(valueHandle) || s.isSubscribed(valueHandle, indications: true)
    }
}
