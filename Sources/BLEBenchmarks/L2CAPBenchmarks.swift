import BLEHost
import BLEProtocols
import BLEVirtualController
import BLEWire
import Foundation

/// LE credit based channels: the sans-I/O manager alone (segmentation, credits, reassembly between two managers in
/// one thread) and two hosts on the in-process virtual controller, with the same payload size as the GATT
/// notification figures so the two read side by side.
enum L2CAPBenchmarks {
    static func run() async throws {
        managers()
        for (size, count) in [(27, 8), (251, 8)] { try await hosts(aclSize: size, aclCount: count) }
    }

    /// 20 MB through two managers fed each other's frames: SDUs of 512 bytes, MPS 247, 16 credits, credits returned
    /// on consumption.
    static func managers() {
        var central = L2CAPChannelManager(role: .central)
        var peripheral = L2CAPChannelManager(role: .peripheral, configuration: .init(creditReturn: .onConsumption))
        let spsm = L2CAPSPSM(rawValue: 0x80)
        try? peripheral.listen(spsm: spsm)
        guard let (cid, open) = try? central.connect(spsm: spsm) else { return }
        var toPeripheral = open.compactMap { if case .send(let frame) = $0 { frame } else { nil } }
        var toCentral: [L2CAPBasicFrame] = []
        func pump() {
            while !toPeripheral.isEmpty || !toCentral.isEmpty {
                for frame in toPeripheral {
                    for action in peripheral.receive(frame) {
                        switch action {
                        case .send(let reply): toCentral.append(reply)
                        case .deliverSDU(let channel, _):
                            for case .send(let reply) in peripheral.consumed(on: channel) { toCentral.append(reply) }
                        default: break
                        }
                    }
                }
                toPeripheral = []
                for frame in toCentral {
                    for case .send(let next) in central.receive(frame) { toPeripheral.append(next) }
                }
                toCentral = []
            }
        }
        pump()
        let sdu = [UInt8](repeating: 0xA5, count: 512)
        let total = 40_000
        let clock = ContinuousClock()
        let elapsed = clock.measure {
            for _ in 0..<total {
                guard let actions = try? central.send(sdu, on: cid) else { return }
                for case .send(let frame) in actions { toPeripheral.append(frame) }
                pump()
            }
        }
        let (s, a) = elapsed.components
        let seconds = Double(s) + Double(a) / 1e18
        print(String(format: "  two managers, one thread: %d SDUs of 512 bytes (3 K-frames each) in %.2f s: %8.0f SDUs/s, %7.1f MB/s",
                     total, seconds, Double(total) / seconds, Double(total * 512) / seconds / 1e6))
    }

    /// 5,000 SDUs of 244 bytes from a central's channel to a peripheral's, through the whole stack.
    static func hosts(aclSize: Int, aclCount: Int) async throws {
        let air = VirtualAir(clock: .realTime)
        let peripheral = HCIHost(transport: air.addController(.init(aclBufferSize: aclSize, aclBufferCount: aclCount)).makeHostTransport())
        let central = HCIHost(transport: air.addController(.init(position: Position(x: 1), aclBufferSize: aclSize,
                                                                 aclBufferCount: aclCount)).makeHostTransport())
        try await peripheral.powerOn()
        try await central.powerOn()
        let spsm = L2CAPSPSM(rawValue: 0x80)
        let incoming = try await peripheral.listen(spsm: spsm)
        try await peripheral.startAdvertising(.init(data: AdvertisingData(localName: "bench")))
        guard let address = await peripheral.ownAddress else { return }
        let link = try await central.connect(to: address)
        let channel = try await central.openL2CAPChannel(spsm: spsm, on: link)
        var accepted = incoming.makeAsyncIterator()
        guard let server = await accepted.next() else { return }
        let total = 5_000
        let payload = [UInt8](repeating: 0x5A, count: 244)
        let clock = ContinuousClock()
        let start = clock.now
        let receiver = Task { () -> Int in
            var n = 0
            for await _ in server.incoming {
                n += 1
                if n == total { break }
            }
            return n
        }
        for _ in 0..<total { try await channel.send(payload) }
        let received = await receiver.value
        let (s, a) = (clock.now - start).components
        let seconds = Double(s) + Double(a) / 1e18
        print(String(format: "  controller buffers %3d x %d: %d SDUs of 244 bytes in %.2f s: %8.0f SDUs/s, %6.2f MB/s payload",
                     aclSize, aclCount, received, seconds, Double(received) / seconds, Double(received * 244) / seconds / 1e6))
        await central.powerOff()
        await peripheral.powerOff()
    }
}
