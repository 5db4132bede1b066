import BLEHost
import BLEProtocols
import BLEVirtualController
import BLEWire
import Foundation

/// Pairing between two hosts on the in-process virtual controller (real-time clock): how long `HCIHost.pair` takes
/// from the Pairing Request to the last distributed key, per method, and how long a bonded link takes to encrypt.
enum PairingBenchmarks {
    struct Case {
        let name: String
        let central: SecurityConfiguration
        let peripheral: SecurityConfiguration
        let passkey: UInt32?
    }

    static func run(rounds: Int = 20) async throws {
        let cases = [
            Case(name: "LE Secure Connections, Just Works", central: .init(bonding: false), peripheral: .init(bonding: false), passkey: nil),
            Case(name: "LE Secure Connections, Passkey Entry", central: .init(ioCapability: .keyboardOnly, bonding: false, mitm: true),
                 peripheral: .init(ioCapability: .displayOnly, bonding: false, fixedPasskey: 123456), passkey: 123456),
            Case(name: "LE legacy, Just Works", central: .init(bonding: false, secureConnections: false),
                 peripheral: .init(bonding: false, secureConnections: false), passkey: nil),
        ]
        for c in cases {
            var times: [Double] = []
            for _ in 0..<rounds {
                guard let ms = try await pairOnce(c) else { continue }
                times.append(ms)
            }
            report(c.name, times)
        }
        var times: [Double] = []
        for _ in 0..<rounds { if let ms = try await bondedReconnection() { times.append(ms) } }
        report("bonded reconnection: encryption with the stored key", times)
    }

    static func report(_ name: String, _ times: [Double]) {
        let sorted = times.sorted()
        guard !sorted.isEmpty else {
            print("  \(name): no successful run")
            return
        }
        let median = sorted[sorted.count / 2]
        let p90 = sorted[min(sorted.count - 1, sorted.count * 9 / 10)]
        print("  " + name.padding(toLength: 55, withPad: " ", startingAt: 0)
              + String(format: "median %6.2f ms, p90 %6.2f ms (%d runs)", median, p90, sorted.count))
    }

    /// Two powered hosts on a fresh air, connected; returns them with the central's link.
    static func connected(central: SecurityConfiguration, peripheral: SecurityConfiguration) async throws -> (VirtualAir, HCIHost, HCIHost, HostConnection)? {
        let air = VirtualAir(clock: .realTime)
        var pc = HCIHost.Configuration()
        pc.security = peripheral
        var cc = HCIHost.Configuration()
        cc.security = central
        let p = HCIHost(transport: air.addController(.init()).makeHostTransport(), configuration: pc)
        let c = HCIHost(transport: air.addController(.init(position: Position(x: 1))).makeHostTransport(), configuration: cc)
        try await p.powerOn()
        try await c.powerOn()
        try await p.startAdvertising(.init(data: AdvertisingData(localName: "bench")))
        guard let address = await p.ownAddress else { return nil }
        let link = try await c.connect(to: address)
        return (air, c, p, link)
    }

    static func pairOnce(_ c: Case) async throws -> Double? {
        guard let (air, central, peripheral, link) = try await connected(central: c.central, peripheral: c.peripheral) else { return nil }
        defer { air.shutdown() }
        await central.setPairingAgent(AutomaticPairingAgent(passkey: c.passkey))
        let clock = ContinuousClock()
        let start = clock.now
        let security = try await central.pair(link)
        let elapsed = clock.now - start
        await central.powerOff()
        await peripheral.powerOff()
        guard security.isEncrypted else { return nil }
        return milliseconds(elapsed)
    }

    static func bondedReconnection() async throws -> Double? {
        guard let (air, central, peripheral, link) = try await connected(central: .init(), peripheral: .init()) else { return nil }
        defer { air.shutdown() }
        _ = try await central.pair(link)
        try await central.disconnect(link)
        try await Task.sleep(for: .milliseconds(20))
        try await peripheral.startAdvertising(.init(data: AdvertisingData(localName: "bench")))
        guard let address = await peripheral.ownAddress else { return nil }
        let again = try await central.connect(to: address)
        let clock = ContinuousClock()
        let start = clock.now
        let security = try await central.pair(again)
        let elapsed = clock.now - start
        await central.powerOff()
        await peripheral.powerOff()
        guard security.isEncrypted, security.isBonded else { return nil }
        return milliseconds(elapsed)
    }

    static func milliseconds(_ d: Duration) -> Double {
        let (s, a) = d.components
        return Double(s) * 1e3 + Double(a) / 1e15
    }
}
