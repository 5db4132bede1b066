import BLE
import BLEVirtualController
import Foundation
import GRPCCore
import GRPCNIOTransportHTTP2
import PandoraInterfaces
import PandoraServer
import SwiftProtobuf
import Testing

/// `pandora.l2cap.L2CAP` through real gRPC clients: two servers on one virtual air, B (central) opens an LE credit
/// based channel that A waits for, SDUs go both ways, A (peripheral) opens one that B waits for, B closes the first
/// and A sees it close.
@Suite(.timeLimit(.minutes(2))) struct L2CAPServiceTests {
    @Test func connectWaitSendReceiveAndDisconnect() async throws {
        let air = VirtualAir(clock: .realTime)
        defer { air.shutdown() }
        let a = try await SecurityServiceTests.start(on: air, ioCapability: .noInputNoOutput)
        let b = try await SecurityServiceTests.start(on: air, ioCapability: .noInputNoOutput)
        defer {
            a.serving.cancel()
            b.serving.cancel()
        }
        try await withGRPCClient(transport: .http2NIOPosix(target: .ipv4(address: "127.0.0.1", port: a.port), transportSecurity: .plaintext)) { ca in
            try await withGRPCClient(transport: .http2NIOPosix(target: .ipv4(address: "127.0.0.1", port: b.port), transportSecurity: .plaintext)) { cb in
                let (linkA, linkB) = try await SecurityServiceTests.connect(SecurityServiceTests.Clients(ca), SecurityServiceTests.Clients(cb))
                let l2capA = Pandora_L2cap_L2CAP.Client(wrapping: ca), l2capB = Pandora_L2cap_L2CAP.Client(wrapping: cb)
                var credits = Pandora_L2cap_CreditBasedChannelRequest()
                credits.spsm = 0x0081
                credits.mtu = 100

                var wait = Pandora_L2cap_WaitConnectionRequest()
                wait.connection = linkA
                wait.leCreditBased = credits
                async let waited = l2capA.waitConnection(wait)
                // The listener is up once A's WaitConnection is in; B retries until it is.
                var connect = Pandora_L2cap_ConnectRequest()
                connect.connection = linkB
                connect.leCreditBased = credits
                var opened: Pandora_L2cap_ConnectResponse?
                for _ in 0..<50 where opened == nil {
                    opened = try? await l2capB.connect(connect)
                    if opened == nil { try await Task.sleep(for: .milliseconds(20)) }
                }
                let channelB = try #require(opened).channel
                let channelA = try await waited.channel
                #expect(channelA.cookie.value.count == 8 && channelB.cookie.value.count == 8)

                // B sends two SDUs, A receives them in order; A answers, B receives it.
                var receive = Pandora_L2cap_ReceiveRequest()
                receive.channel = channelA
                let (atA, receivingA) = HostServiceTests.open { [receive] (yield: @escaping @Sendable (Pandora_L2cap_ReceiveResponse) -> Void) in
                    try await l2capA.receive(receive) { response in
                        for try await message in response.messages { yield(message) }
                    }
                }
                defer { receivingA.cancel() }
                var send = Pandora_L2cap_SendRequest()
                send.channel = channelB
                send.data = Data("hello".utf8)
                #expect(try await l2capB.send(send).success == Google_Protobuf_Empty())
                send.data = Data(repeating: 0x5A, count: 100)
                _ = try await l2capB.send(send)
                var iterator = atA.makeAsyncIterator()
                #expect(await iterator.next()?.data == Data("hello".utf8))
                #expect(await iterator.next()?.data == Data(repeating: 0x5A, count: 100))
                send.channel = channelA
                send.data = Data("back".utf8)
                _ = try await l2capA.send(send)
                receive.channel = channelB
                let (atB, receivingB) = HostServiceTests.open { [receive] (yield: @escaping @Sendable (Pandora_L2cap_ReceiveResponse) -> Void) in
                    try await l2capB.receive(receive) { response in
                        for try await message in response.messages { yield(message) }
                    }
                }
                defer { receivingB.cancel() }
                #expect(await HostServiceTests.first(atB) { _ in true }?.data == Data("back".utf8))

                // A, the peripheral, opens a second channel, on another PSM, that B waits for (either side of an LE
                // link may: Core 5.4, Vol 3, Part A, 4.22); an SDU goes from A to B on it.
                var second = credits
                second.spsm = 0x0082
                var waitB = Pandora_L2cap_WaitConnectionRequest()
                waitB.connection = linkB
                waitB.leCreditBased = second
                async let waitedB = l2capB.waitConnection(waitB)
                var fromA = Pandora_L2cap_ConnectRequest()
                fromA.connection = linkA
                fromA.leCreditBased = second
                var openedByA: Pandora_L2cap_ConnectResponse?
                for _ in 0..<50 where openedByA == nil {
                    openedByA = try? await l2capA.connect(fromA)
                    if openedByA == nil { try await Task.sleep(for: .milliseconds(20)) }
                }
                let secondA = try #require(openedByA).channel
                let secondB = try await waitedB.channel
                receive.channel = secondB
                let (onSecond, receivingSecond) = HostServiceTests.open { [receive] (yield: @escaping @Sendable (Pandora_L2cap_ReceiveResponse) -> Void) in
                    try await l2capB.receive(receive) { response in
                        for try await message in response.messages { yield(message) }
                    }
                }
                defer { receivingSecond.cancel() }
                send.channel = secondA
                send.data = Data("from the peripheral".utf8)
                _ = try await l2capA.send(send)
                #expect(await HostServiceTests.first(onSecond) { _ in true }?.data == Data("from the peripheral".utf8))

                // B closes; A's WaitDisconnection returns and its Receive stream ends.
                var waitDisconnection = Pandora_L2cap_WaitDisconnectionRequest()
                waitDisconnection.channel = channelA
                async let closedA = l2capA.waitDisconnection(waitDisconnection)
                var disconnect = Pandora_L2cap_DisconnectRequest()
                disconnect.channel = channelB
                #expect(try await l2capB.disconnect(disconnect).success == Google_Protobuf_Empty())
                #expect(try await closedA.success == Google_Protobuf_Empty())
                #expect(await iterator.next() == nil)
            }
        }
    }
}
