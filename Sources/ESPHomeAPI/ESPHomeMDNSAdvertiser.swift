#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import NIOCore
import NIOPosix

/// ``ESPHomeMDNSResponder`` on the network: a UDP socket on port 5353 (shared with other responders, as RFC 6762
/// allows) joined to 224.0.0.251 on every IPv4 interface that can multicast; it announces the service twice, answers
/// queries, and says goodbye on ``stop()``.
public final class ESPHomeMDNSAdvertiser: Sendable {
    /// The multicast DNS group and port.
    public static let group = "224.0.0.251"
    /// The multicast DNS port.
    public static let port = 5353

    private let outbox: AsyncStream<AddressedEnvelope<ByteBuffer>>.Continuation
    private let task: Task<Void, Never>
    private let responder: ESPHomeMDNSResponder
    private let groupAddress: SocketAddress

    private init(responder: ESPHomeMDNSResponder, groupAddress: SocketAddress, outbox: AsyncStream<AddressedEnvelope<ByteBuffer>>.Continuation,
                 task: Task<Void, Never>) {
        self.responder = responder
        self.groupAddress = groupAddress
        self.outbox = outbox
        self.task = task
    }

    /// The IPv4 interfaces that can multicast (loopback left out), with their addresses.
    public static func multicastInterfaces() throws -> [(device: NIONetworkDevice, address: [UInt8])] {
        try System.enumerateDevices().compactMap { device in
            guard device.multicastSupported, case .v4(let v4)? = device.address else { return nil }
            let raw = v4.address.sin_addr.s_addr   // network byte order in memory
            let bytes = withUnsafeBytes(of: raw) { Array($0) }
            return bytes.first == 127 ? nil : (device, bytes)
        }
    }

    /// Starts answering and announces the service (twice, a second apart).
    public static func start(_ responder: ESPHomeMDNSResponder) async throws -> ESPHomeMDNSAdvertiser {
        let groupAddress = try SocketAddress(ipAddress: group, port: port)
        let channel = try await DatagramBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelOption(.socketOption(.so_reuseaddr), value: 1)
            .channelOption(ChannelOptions.socketOption(NIOBSDSocket.Option(rawValue: SO_REUSEPORT)), value: 1)
            .bind(host: "0.0.0.0", port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try NIOAsyncChannel<AddressedEnvelope<ByteBuffer>, AddressedEnvelope<ByteBuffer>>(wrappingChannelSynchronously: channel)
                }
            }
        // RFC 6762, 11: multicast DNS packets go out with an IP TTL of 255.
        try await channel.channel.setOption(ChannelOptions.ipOption(.ip_multicast_ttl), value: 255)
        if let multicast = channel.channel as? any MulticastChannel {
            for (device, _) in try multicastInterfaces() {
                try await multicast.joinGroup(groupAddress, device: device).get()
            }
        }
        let (stream, outbox) = AsyncStream.makeStream(of: AddressedEnvelope<ByteBuffer>.self)
        let task = Task<Void, Never> {
            try? await channel.executeThenClose { inbound, outbound in
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask {
                        for await envelope in stream { try? await outbound.write(envelope) }
                    }
                    group.addTask {
                        for try await envelope in inbound {
                            let legacy = envelope.remoteAddress.port != port
                            guard let reply = responder.answer(Array(envelope.data.readableBytesView), legacyUnicast: legacy) else { continue }
                            outbox.yield(AddressedEnvelope(remoteAddress: legacy ? envelope.remoteAddress : groupAddress, data: ByteBuffer(bytes: reply)))
                        }
                    }
                    // The writer ends first, when stop() finished the outbox (after the goodbye).
                    try await group.next()
                    group.cancelAll()
                }
            }
        }
        let advertiser = ESPHomeMDNSAdvertiser(responder: responder, groupAddress: groupAddress, outbox: outbox, task: task)
        let announcement = try responder.announcement()
        outbox.yield(AddressedEnvelope(remoteAddress: groupAddress, data: ByteBuffer(bytes: announcement)))
        Task {
            try? await Task.sleep(for: .seconds(1))
            outbox.yield(AddressedEnvelope(remoteAddress: groupAddress, data: ByteBuffer(bytes: announcement)))
        }
        return advertiser
    }

    /// Says goodbye (the records with TTL 0) and closes the socket.
    public func stop() async {
        if let goodbye = try? responder.announcement(goodbye: true) {
            outbox.yield(AddressedEnvelope(remoteAddress: groupAddress, data: ByteBuffer(bytes: goodbye)))
        }
        outbox.finish()
        await task.value
    }
}
