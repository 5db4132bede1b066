import BLE
import BLEFiles
import BLEHost
import BLETestSupport
import BLEVirtualController
import Foundation
import Testing

/// What a command-line tool on the public API needs: open a controller with a capture, know its own address, power it
/// off on the way out, and run the sample device on a peripheral manager with a typed log.
@Suite(.timeLimit(.minutes(1))) struct CommandLineSupportTests {
    @Test func sampleDeviceOnAPeripheralManagerLogsTypedFields() async throws {
        let air = VirtualAir(clock: .realTime)
        defer { air.shutdown() }
        let manager = try await PeripheralManager(transport: air.addController(.init()).makeHostTransport())
        let lab = await SamplePeripheral(manager: manager, device: .lab, name: "Typed")
        let (logged, log) = AsyncStream.makeStream(of: [String: JSONValue].self)
        try await lab.start(notifyEvery: .seconds(60)) { activity in if let entry = activity.logEntry { log.yield(entry.fields) } }
        let central = try await Central(transport: air.addController(.init(position: Position(x: 1))).makeHostTransport())
        let found = try await withTimeout {
            for try await d in try await central.scan(timeout: .seconds(5)) where d.name == "Typed" { return d }
            throw TimedOut()
        }
        // The address the peripheral manager says it advertises with is the one the central finds.
        #expect(await manager.address == found.address)
        let remote = try await central.connect(found, timeout: .seconds(5))
        #expect(await remote.connection.peer == found.address)
        // The name given to the sample device is the GAP device name too.
        let gap = try #require(try await remote.discoverServices([BluetoothUUID(0x1800)]).first)
        let name = try #require(try await remote.discoverCharacteristics([BluetoothUUID(0x2A00)], for: gap).first)
        #expect(try await remote.readValue(for: name) == Array("Typed".utf8))
        // The log's fields carry JSON types: the connection handle and the MTU are numbers, the peer a string.
        let handle = JSONValue.integer(await remote.connection.handle.rawValue)
        let events = try await withTimeout {
            var seen: [[String: JSONValue]] = []
            for await fields in logged {
                seen.append(fields)
                if seen.contains(where: { $0["event"] == "mtu" }), seen.contains(where: { $0["event"] == "connected" }) { return seen }
            }
            throw TimedOut()
        }
        let mtu: [String: JSONValue] = ["event": "mtu", "connection": handle, "mtu": 247]
        #expect(events.contains(mtu))
        let connected: [String: JSONValue] = ["event": "connected", "handle": handle,
                                              "peer": .string(await central.address?.address.description ?? "?")]
        #expect(events.contains(connected))
        try await central.disconnect(remote)
        await lab.stop()
        await manager.powerOff()
        await central.powerOff()
        #expect(await central.state == .poweredOff)
        #expect(await manager.adapter.state == .poweredOff)
        await central.powerOff()   // idempotent
    }

    @Test func openingWithACaptureRecordsTheSession() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("open-\(UInt64.random(in: 0...UInt64.max)).btsnoop").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let central = try await Central.open(.virtual, btsnoop: path)
        #expect(await central.state == .poweredOn)
        #expect(await central.address != nil)
        await central.powerOff()
        #expect(await central.state == .poweredOff)
        let capture = try #require(FileManager.default.contents(atPath: path))
        // The btsnoop header, then at least the bring-up's commands and their completions.
        #expect(Array(capture.prefix(8)) == Array("btsnoop\0".utf8))
        #expect(capture.count > 16 + 10 * 24)
    }

    @Test func aCaptureThatCannotBeWrittenFailsTheOpen() async throws {
        await #expect(throws: (any Error).self) {
            _ = try await Central.open(.virtual, btsnoop: "/nonexistent-directory/capture.btsnoop")
        }
    }
}

@Suite struct OpenErrorMessageTests {
    @Test func theSpecificationIsNamedOnce() async throws {
        let spec = try HCITransportSpec(parsing: "tcp:127.0.0.1:1")
        do {
            _ = try await Central.open(spec)
            Issue.record("nothing listens on port 1, yet the open succeeded")
        } catch let error as TransportError {
            #expect(error.reason.hasPrefix("no controller at tcp:127.0.0.1:1: "))
            #expect(!error.reason.contains("tcp:127.0.0.1:1: tcp:127.0.0.1:1"))
            #expect(error.errno != nil)
        }
    }
}
