import BLEHost
import BLEProtocols
import BLETestSupport
import BLETransport
import BLEWire
import Foundation
import Testing

/// LE credit based channels against Bumble's host (an independent L2CAP implementation), over Bumble's controllers.
/// Runs only when `BLE_INTEROP_L2CAP_PORT` names the H4/TCP port of a controller linked to one that
/// `Tests/Interop/peers/l2cap_peer.py` drives:
///
/// ```sh
/// .venv-bumble/bin/python Tests/Interop/peers/lab_controllers.py 7001 7002 &
/// .venv-bumble/bin/python Tests/Interop/peers/l2cap_peer.py --transport tcp-client:127.0.0.1:7001 &
/// BLE_INTEROP_L2CAP_PORT=7002 swift test --filter L2CAPInteropTests
/// ```
@Suite(.enabled(if: ProcessInfo.processInfo.environment["BLE_INTEROP_L2CAP_PORT"] != nil), .timeLimit(.minutes(1)))
struct L2CAPInteropTests {
    static func pattern(_ count: Int, seed: UInt8) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ $0 >> 8) ^ seed }
    }

    @Test func echoBothWaysWithBumble() async throws {
        let port = try #require(ProcessInfo.processInfo.environment["BLE_INTEROP_L2CAP_PORT"].flatMap { UInt16($0) })
        let host = HCIHost(transport: try TCPTransport.connect(host: "127.0.0.1", port: port))
        try await host.powerOn()
        // Bumble opens a channel to SPSM 0x0081 once connected; everything it sends comes back.
        let incoming = try await host.listen(spsm: L2CAPSPSM(rawValue: 0x0081), parameters: .init(mtu: 700, mps: 90, initialCredits: 3))
        let bumble = LEAddress(try #require(BluetoothAddress("D1:D2:D3:D4:D5:D6")), type: .random)
        let connection = try await withTimeout { try await host.connect(to: bumble, timeout: .seconds(5)) }
        let echo = Task {
            for await channel in incoming {
                // Its SDUs follow our MTU (700), ours its MTU (512): the bytes come back cut to fit.
                for await sdu in channel.incoming {
                    var offset = 0
                    while offset < sdu.count {
                        let end = min(sdu.count, offset + channel.peerMTU)
                        try await channel.send(Array(sdu[offset..<end]))
                        offset = end
                    }
                }
                return
            }
        }

        // Our channel to Bumble's echo on SPSM 0x0080 (MTU 1024, MPS 100, 8 credits on its side).
        let channel = try await withTimeout {
            try await host.openL2CAPChannel(spsm: L2CAPSPSM(rawValue: 0x0080), on: connection,
                                            parameters: .init(mtu: 1024, mps: 247, initialCredits: 5))
        }
        #expect(channel.info.peerMTU == 1024 && channel.info.peerMPS == 100)
        let data = Self.pattern(64 * 1024, seed: 0xC3)
        let received = try await withTimeout(50) {
            try await withThrowingTaskGroup(of: [UInt8].self) { group in
                group.addTask {
                    // SDUs of 1 byte, around Bumble's MPS, and of its whole MTU.
                    let sizes = [1, 98, 99, 100, 1024]
                    var offset = 0
                    var round = 0
                    while offset < data.count {
                        let end = min(data.count, offset + sizes[round % sizes.count])
                        try await channel.send(Array(data[offset..<end]))
                        offset = end
                        round += 1
                    }
                    return []
                }
                group.addTask {
                    var out: [UInt8] = []
                    for await sdu in channel.incoming {
                        out += sdu
                        if out.count >= data.count { break }
                    }
                    return out
                }
                var echoed: [UInt8] = []
                for try await part in group where !part.isEmpty { echoed = part }
                return echoed
            }
        }
        #expect(received == data)

        // Three enhanced channels to the same echo, one request.
        let enhanced = try await withTimeout {
            try await host.openL2CAPChannels(spsm: L2CAPSPSM(rawValue: 0x0080), count: 3, on: connection,
                                             parameters: .init(mtu: 256, mps: 64, initialCredits: 2))
        }
        #expect(enhanced.count == 3 && enhanced.allSatisfy { $0.info.isEnhanced && $0.info.peerMTU == 1024 })
        for (index, channel) in enhanced.enumerated() {
            let sdu = Self.pattern(1000, seed: UInt8(index))
            try await withTimeout { try await channel.send(sdu) }
            var echoed: [UInt8] = []
            for await part in channel.incoming {
                echoed += part
                if echoed.count >= sdu.count { break }
            }
            #expect(echoed == sdu)
        }
        // An SPSM Bumble does not serve: refused with "SPSM not supported", LE and enhanced alike.
        for enhanced in [false, true] {
            do {
                if enhanced {
                    _ = try await withTimeout {
                        try await host.openL2CAPChannels(spsm: L2CAPSPSM(rawValue: 0x0099), count: 2, on: connection)
                    }
                } else {
                    _ = try await withTimeout { try await host.openL2CAPChannel(spsm: L2CAPSPSM(rawValue: 0x0099), on: connection) }
                }
                Issue.record("a channel to an unserved SPSM opened")
            } catch let error as HostError {
                #expect(error.code == .l2capConnectionFailed(.refused(.spsmNotSupported)), "enhanced: \(enhanced)")
            }
        }
        try await channel.close()
        try await withTimeout(30) { try await echo.value }
    }
}
