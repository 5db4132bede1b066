import BLE
import BLETestSupport
import Foundation
import Testing

// The README's examples, compiled and run as written (each body below is a README block, indented): a central, a
// peripheral, and both roles in one process, on the embedded world that `.virtual` opens.

func readmeCentral() async throws {
    // A central: find a heart-rate sensor, read its battery level, take three heart rates.
    let central = await Central(.virtual)                // or Central(.tcp(host: "127.0.0.1", port: 9100)), Central(.userChannel(index: 0))
    for try await device in try await central.scan(services: [.heartRate], timeout: .seconds(5)) {
        let sensor = try await central.connect(device)   // the MTU is exchanged on connect, as on iOS
        let battery = try await sensor.discoverServices([.battery])[0]
        let level = try await sensor.discoverCharacteristics([0x2A19], for: battery)[0]
        print("battery", try await sensor.readValue(for: level))
        let heartRate = try await sensor.discoverServices([.heartRate])[0]
        let measurement = try await sensor.discoverCharacteristics([0x2A37], for: heartRate)[0]
        for await value in try await sensor.notifications(for: measurement).prefix(3) { print("heart rate", value) }
        try await central.disconnect(sensor)
        break
    }
}

func readmePeripheral() async throws {
    // A peripheral: a counter whose value the application computes on each read, writable with one byte.
    let manager = try await PeripheralManager(.virtual, deviceName: "Counter")
    try await manager.add(GATTServiceDefinition(uuid: 0xFFF0, characteristics: [
        GATTCharacteristicDefinition(uuid: 0xFFF1, properties: [.read, .write], permissions: [.readable, .writeable],
                                     source: .application),
    ]))
    let requests = await manager.requests()
    try await manager.startAdvertising(name: "Counter", serviceUUIDs: [0xFFF0], restartAfterConnection: true)
    var count: UInt8 = 0
    for await request in requests {                      // each one attributed to its central: request.central
        guard case .application(let asked) = request.kind else { continue }   // stored writes, subscriptions, MTUs
        switch asked.kind {
        case .read:
            count &+= 1
            await asked.respond(with: [count])
        case .write(let value, _) where value.count == 1:
            count = value[0]
            await asked.accept()
        case .write, .preparedWrites:
            await asked.refuse(ATTErrorCode(rawValue: 0x80))   // an application error
        }
    }
}

func readmeBothRoles() async throws {
    // Both roles in one process: a peripheral serving a computed value and a central reading it.
    let server = try await PeripheralManager(.virtual, deviceName: "Ticker")
    try await server.add(GATTServiceDefinition(uuid: 0xFFE0, characteristics: [
        GATTCharacteristicDefinition(uuid: 0xFFE1, properties: .read, source: .application),
    ]))
    let requests = await server.requests()
    let answering = Task {
        var ticks: UInt8 = 0
        for await request in requests {
            guard case .application(let asked) = request.kind else { continue }
            ticks &+= 1
            await asked.respond(with: [ticks])
        }
    }
    try await server.startAdvertising(name: "Ticker", serviceUUIDs: [0xFFE0])
    let client = await Central(.virtual)
    for try await device in try await client.scan(services: [0xFFE0], timeout: .seconds(5)) where device.name == "Ticker" {
        let ticker = try await client.connect(device)
        let service = try await ticker.discoverServices([0xFFE0])[0]
        let tick = try await ticker.discoverCharacteristics([0xFFE1], for: service)[0]
        for _ in 0..<3 { print("tick", try await ticker.readValue(for: tick)) }
        try await client.disconnect(ticker)
        break
    }
    answering.cancel()
}

@Suite(.timeLimit(.minutes(1))) struct ReadmeTests {
    @Test func theExamplesRunAsWritten() async throws {
        try await withTimeout(20) { try await readmeCentral() }
        try await withTimeout(20) { try await readmeBothRoles() }
        // The peripheral runs until cancelled; a central reads its counter, sets it and reads again meanwhile.
        let serving = Task { try await readmePeripheral() }
        defer { serving.cancel() }
        let central = await Central(.virtual)
        let values = try await withTimeout(20) { () -> [[UInt8]] in
            for try await device in try await central.scan(services: [0xFFF0], timeout: .seconds(5)) {
                let counter = try await central.connect(device)
                let service = try await counter.discoverServices([0xFFF0])[0]
                let value = try await counter.discoverCharacteristics([0xFFF1], for: service)[0]
                var values = [try await counter.readValue(for: value), try await counter.readValue(for: value)]
                try await counter.writeValue([41], for: value, type: .withResponse)
                values.append(try await counter.readValue(for: value))
                try await central.disconnect(counter)
                return values
            }
            return []
        }
        #expect(values == [[1], [2], [42]])
    }

    /// Every Swift block of the README is one of the examples above, line for line (except the sample of the
    /// section on testing iOS code, which is one of HeartRateKitTests' tests and checked there).
    @Test func theReadmeShowsTheseExamples() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        var readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
        if let section = readme.range(of: "## Testing iOS Bluetooth code on Linux") {
            let next = readme.range(of: "\n## ", range: section.upperBound..<readme.endIndex)?.lowerBound ?? readme.endIndex
            readme.removeSubrange(section.lowerBound..<next)
        }
        let source = try String(contentsOf: URL(fileURLWithPath: #filePath), encoding: .utf8)
        let sourceLines = Set(source.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) })
        let blocks = readme.components(separatedBy: "```swift\n").dropFirst().compactMap { $0.components(separatedBy: "```").first }
        #expect(blocks.count == 3)
        for block in blocks {
            for line in block.split(separator: "\n").map({ $0.trimmingCharacters(in: .whitespaces) }) where !line.isEmpty && line != "import BLE" {
                #expect(sourceLines.contains(line), "README line not in the compiled examples: \(line)")
            }
        }
    }
}
