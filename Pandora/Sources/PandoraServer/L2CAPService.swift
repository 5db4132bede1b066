import BLE
import BLEWire
import Foundation
import GRPCCore
import PandoraInterfaces
import SwiftProtobuf

/// The LE credit based channels a Pandora server opened or accepted, by the opaque token (`Channel.cookie.value`)
/// it gave for each: what each received and not yet handed to Receive, and whether it closed.
actor PandoraChannels {
    struct Entry {
        let channel: L2CAPChannel
        var received: [Data] = []
        var closed = false
    }

    private var entries: [Data: Entry] = [:]
    private var nextToken: UInt64 = 1
    private var watchers: [UInt64: AsyncStream<Void>.Continuation] = [:]
    private var nextWatcher: UInt64 = 0

    /// Registers `channel` and starts taking its SDUs (the server holds them for Receive: credits go back to the peer
    /// as they arrive).
    func add(_ channel: L2CAPChannel) -> Data {
        var token = Data(count: 8)
        for index in 0..<8 { token[index] = UInt8(truncatingIfNeeded: nextToken >> (56 - 8 * UInt64(index))) }
        nextToken += 1
        entries[token] = Entry(channel: channel)
        Task { [weak self] in
            for await sdu in channel.incoming { await self?.received(Data(sdu), on: token) }
            await self?.closed(token)
        }
        return token
    }

    func channel(_ token: Data) -> Entry? { entries[token] }

    private func received(_ sdu: Data, on token: Data) {
        entries[token]?.received.append(sdu)
        notify()
    }

    private func closed(_ token: Data) {
        entries[token]?.closed = true
        notify()
    }

    /// The next SDU received on `token`, or `nil` once the channel closed with nothing left.
    func next(_ token: Data) async throws -> Data? {
        let (changes, id) = watch()
        defer { unwatch(id) }
        var iterator = changes.makeAsyncIterator()
        while true {
            guard var entry = entries[token] else { return nil }
            if !entry.received.isEmpty {
                let sdu = entry.received.removeFirst()
                entries[token] = entry
                return sdu
            }
            if entry.closed { return nil }
            guard await iterator.next() != nil else { throw CancellationError() }
        }
    }

    /// Waits until the channel `token` closed.
    func waitClosed(_ token: Data) async throws {
        let (changes, id) = watch()
        defer { unwatch(id) }
        var iterator = changes.makeAsyncIterator()
        while entries[token]?.closed == false {
            guard await iterator.next() != nil else { throw CancellationError() }
        }
    }

    private func watch() -> (AsyncStream<Void>, UInt64) {
        let (stream, continuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        nextWatcher += 1
        watchers[nextWatcher] = continuation
        return (stream, nextWatcher)
    }

    private func unwatch(_ id: UInt64) { watchers.removeValue(forKey: id)?.finish() }

    private func notify() { for watcher in watchers.values { watcher.yield() } }
}

/// `pandora.l2cap.L2CAP` for LE credit based channels (Core 5.4, Vol 3, Part A, 10.1): Connect (from the central's
/// side of a link: the public API opens channels as a central), WaitConnection (a channel the peer opens on the PSM,
/// on this link), Send, Receive, Disconnect, WaitDisconnection. Basic (BR/EDR) and enhanced credit based channels and
/// fixed channels answer UNIMPLEMENTED.
struct L2CAPService: Pandora_L2cap_L2CAP.SimpleServiceProtocol {
    let device: PandoraDevice
    let channels: PandoraChannels

    func connect(request: Pandora_L2cap_ConnectRequest, context: ServerContext) async throws -> Pandora_L2cap_ConnectResponse {
        guard case .leCreditBased(let asked)? = request.type else { throw Self.unsupported(request.type.map { "\($0)" }) }
        let stack = try await device.current()
        guard let link = await device.link(request.connection.cookie.value), link.isConnected else {
            throw RPCError(code: .notFound, message: "L2CAP Connect: no connection with this token")
        }
        let (psm, parameters) = try Self.parameters(asked)
        do {
            // Either side of an LE link may open a channel (Core 5.4, Vol 3, Part A, 4.22): the central through its
            // remote peripheral, the peripheral to the central's connection.
            let channel = if let remote = link.remote {
                try await remote.openL2CAPChannel(psm, parameters: parameters)
            } else {
                try await stack.peripheral.openL2CAPChannel(psm, to: link.connection, parameters: parameters)
            }
            var response = Pandora_L2cap_ConnectResponse()
            response.channel = Self.channel(await channels.add(channel))
            return response
        } catch {
            throw RPCError(code: .unavailable, message: "L2CAP Connect to PSM \(psm): \(error)")
        }
    }

    func waitConnection(request: Pandora_L2cap_WaitConnectionRequest, context: ServerContext) async throws -> Pandora_L2cap_WaitConnectionResponse {
        guard case .leCreditBased(let asked)? = request.type else { throw Self.unsupported(request.type.map { "\($0)" }) }
        let stack = try await device.current()
        guard let link = await device.link(request.connection.cookie.value), link.isConnected else {
            throw RPCError(code: .notFound, message: "L2CAP WaitConnection: no connection with this token")
        }
        let (psm, parameters) = try Self.parameters(asked)
        let incoming: AsyncStream<L2CAPChannel>
        do {
            incoming = try await stack.peripheral.publishL2CAPChannel(psm, parameters: parameters)
        } catch {
            throw RPCError(code: .failedPrecondition, message: "L2CAP WaitConnection on PSM \(psm): \(error)")
        }
        defer { Task { await stack.peripheral.unpublishL2CAPChannel(psm) } }
        for await channel in incoming where channel.link == link.connection.link {
            var response = Pandora_L2cap_WaitConnectionResponse()
            response.channel = Self.channel(await channels.add(channel))
            return response
        }
        throw RPCError(code: .cancelled, message: "L2CAP WaitConnection: no channel came")
    }

    func disconnect(request: Pandora_L2cap_DisconnectRequest, context: ServerContext) async throws -> Pandora_L2cap_DisconnectResponse {
        guard let entry = await channels.channel(request.channel.cookie.value) else {
            throw RPCError(code: .notFound, message: "L2CAP Disconnect: no channel with this token")
        }
        if !entry.closed {
            do {
                _ = try await entry.channel.close()
            } catch {
                if await channels.channel(request.channel.cookie.value)?.closed != true {
                    throw RPCError(code: .internalError, message: "L2CAP Disconnect: \(error)")
                }
            }
        }
        var response = Pandora_L2cap_DisconnectResponse()
        response.success = Google_Protobuf_Empty()
        return response
    }

    func waitDisconnection(request: Pandora_L2cap_WaitDisconnectionRequest,
                           context: ServerContext) async throws -> Pandora_L2cap_WaitDisconnectionResponse {
        try await channels.waitClosed(request.channel.cookie.value)
        var response = Pandora_L2cap_WaitDisconnectionResponse()
        response.success = Google_Protobuf_Empty()
        return response
    }

    func receive(request: Pandora_L2cap_ReceiveRequest, response: RPCWriter<Pandora_L2cap_ReceiveResponse>,
                 context: ServerContext) async throws {
        guard case .channel(let channel)? = request.source else {
            throw RPCError(code: .unimplemented, message: "L2CAP Receive: only LE credit based channels (no fixed channels)")
        }
        guard await channels.channel(channel.cookie.value) != nil else {
            throw RPCError(code: .notFound, message: "L2CAP Receive: no channel with this token")
        }
        while let sdu = try await channels.next(channel.cookie.value) {
            var message = Pandora_L2cap_ReceiveResponse()
            message.data = sdu
            try await response.write(message)
        }
    }

    func send(request: Pandora_L2cap_SendRequest, context: ServerContext) async throws -> Pandora_L2cap_SendResponse {
        guard case .channel(let channel)? = request.sink else {
            throw RPCError(code: .unimplemented, message: "L2CAP Send: only LE credit based channels (no fixed channels)")
        }
        guard let entry = await channels.channel(channel.cookie.value) else {
            throw RPCError(code: .notFound, message: "L2CAP Send: no channel with this token")
        }
        do {
            try await entry.channel.send(Array(request.data))
        } catch {
            throw RPCError(code: .failedPrecondition, message: "L2CAP Send: \(error)")
        }
        var response = Pandora_L2cap_SendResponse()
        response.success = Google_Protobuf_Empty()
        return response
    }

    // MARK: Conversions

    static func unsupported(_ type: String?) -> RPCError {
        RPCError(code: .unimplemented,
                 message: "only LE credit based channels (le_credit_based) are served; basic channels are BR/EDR, enhanced credit based ones are not served yet (asked: \(type ?? "no type"))")
    }

    /// The PSM and the channel's parameters; zero takes swift-ble's default.
    static func parameters(_ asked: Pandora_L2cap_CreditBasedChannelRequest) throws(RPCError) -> (L2CAPSPSM, L2CAPChannelParameters) {
        guard let spsm = UInt16(exactly: asked.spsm), spsm != 0 else {
            throw RPCError(code: .invalidArgument, message: "spsm \(asked.spsm) is not an LE PSM (0x0001-0x00FF)")
        }
        var parameters = L2CAPChannelParameters()
        if asked.mtu != 0 { parameters.mtu = UInt16(clamping: asked.mtu) }
        if asked.mps != 0 { parameters.mps = UInt16(clamping: asked.mps) }
        if asked.initialCredit != 0 { parameters.initialCredits = UInt16(clamping: asked.initialCredit) }
        guard L2CAPChannelParameters.areValid(mtu: parameters.mtu, mps: parameters.mps, enhanced: false) else {
            throw RPCError(code: .invalidArgument, message: "mtu \(parameters.mtu) / mps \(parameters.mps) are outside what LE allows")
        }
        return (L2CAPSPSM(rawValue: spsm), parameters)
    }

    static func channel(_ token: Data) -> Pandora_L2cap_Channel {
        var channel = Pandora_L2cap_Channel()
        channel.cookie.value = token
        return channel
    }
}
