import BLEWire
import Testing

/// Seeded random and mutated inputs for every decoder: each must return a value or throw `WireError`, never trap.
@Suite struct FuzzTests {
    struct Generator: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    /// Valid encodings to mutate, plus random bytes.
    static let seeds: [[UInt8]] = [
        [UInt8](hex: "0e0401030c00") ?? [], [UInt8](hex: "3e13 01 00 4000 01 01 d6d5d4d3d2d1 2800 0000 f401 00") ?? [],
        [UInt8](hex: "3e0f02010001d6d5d4d3d2d103020106ce") ?? [], [UInt8](hex: "13050140000200") ?? [],
        [UInt8](hex: "11060100050000180600 0d000118") ?? [], [UInt8](hex: "0902 0200 0203 00002a") ?? [],
        [UInt8](hex: "01 01 00 00 10 07 07") ?? [], [UInt8](hex: "1205080006000c000000c800") ?? [],
        [UInt8](hex: "020106 1aff4c000215 e2c56db5dffb48d2b060d0f5a71096e0 0001 0002 c5") ?? [],
    ]

    func inputs(count: Int, seed: UInt64) -> [[UInt8]] {
        var g = Generator(state: seed)
        var out: [[UInt8]] = []
        for i in 0..<count {
            if i % 2 == 0, let base = Self.seeds.randomElement(using: &g) {
                var m = base
                for _ in 0..<Int.random(in: 1...4, using: &g) {
                    switch Int.random(in: 0..<3, using: &g) {
                    case 0 where !m.isEmpty: m[Int.random(in: 0..<m.count, using: &g)] = UInt8.random(in: 0...255, using: &g)
                    case 1 where !m.isEmpty: m.removeSubrange(Int.random(in: 0..<m.count, using: &g)...)
                    default: m.insert(UInt8.random(in: 0...255, using: &g), at: Int.random(in: 0...m.count, using: &g))
                    }
                }
                out.append(m)
            } else {
                out.append((0..<Int.random(in: 0..<40, using: &g)).map { _ in UInt8.random(in: 0...255, using: &g) })
            }
        }
        return out
    }

    @Test func decodersNeverTrap() {
        var decoded = 0
        var rejected = 0
        func attempt(_ body: () throws -> Void) {
            do {
                try body()
                decoded += 1
            } catch {
                rejected += 1
            }
        }
        for bytes in inputs(count: 20_000, seed: 0xF022) {
            attempt { _ = try HCIEvent(packet: HCIEventPacket(bytes: bytes)) }
            attempt { _ = try HCIPacket(h4: bytes) }
            attempt { _ = try HCIACLPacket(bytes: bytes) }
            attempt { _ = try ATTPDU(bytes: bytes) }
            attempt { _ = try SMPPDU(bytes: bytes) }
            attempt { _ = try L2CAPSignalingPDU(bytes: bytes) }
            attempt { _ = try L2CAPBasicFrame(bytes: bytes) }
            attempt {
                let ad = try AdvertisingData(bytes: bytes)
                _ = try? ad.serviceUUIDs()
                _ = try? ad.manufacturerData()
                _ = try? ad.serviceData()
                _ = try? ad.uri()
                _ = ad.localName
            }
            attempt { _ = try HCILECreateConnection(bytes: bytes) }
            var reassembler = L2CAPReassembler(maximumPDULength: 512)
            attempt { _ = try reassembler.append(isStart: true, data: bytes) }
            attempt { _ = try reassembler.append(isStart: false, data: bytes) }
        }
        // Both outcomes happen: the inputs exercise success and failure paths.
        #expect(decoded > 1000 && rejected > 1000)
    }
}

@Suite struct FuzzSeedTests {
    @Test func seedsAreValidHex() {
        #expect(FuzzTests.seeds.allSatisfy { !$0.isEmpty })
    }
}
