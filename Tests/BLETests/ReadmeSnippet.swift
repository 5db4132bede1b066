import BLE
import BLETransport

/// The README's example, compiled (not run) so it stays true.
func readmeExample(transport: any HCITransport) async throws {
    let central = try await Central(transport: transport)          // or: await Central(.tcp(host: "127.0.0.1", port: 9100))
    for try await device in try await central.scan(services: [.heartRate]) {
        let peripheral = try await central.connect(device, reconnect: ReconnectPolicy())
        try await peripheral.exchangeMTU()
        let service = try await peripheral.discoverServices([.heartRate])[0]
        let measurement = try await peripheral.discoverCharacteristics([0x2A37], for: service)[0]
        for await value in try await peripheral.notifications(for: measurement) { print(value) }
    }
}
