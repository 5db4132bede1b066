import BLE
import BLEWire
import Foundation
import GRPCCore
import PandoraInterfaces
import SwiftProtobuf

/// `pandora.Host` over swift-ble's public API: reset, the local address, advertising, scanning, LE connections.
/// The BR/EDR calls (Connect, Inquiry, SetDiscoverabilityMode, SetConnectabilityMode) answer UNIMPLEMENTED.
struct HostService: Pandora_Host.SimpleServiceProtocol {
    let device: PandoraDevice

    // MARK: Reset and identity

    func factoryReset(request: Google_Protobuf_Empty, context: ServerContext) async throws -> Google_Protobuf_Empty {
        try await device.factoryReset()
        return Google_Protobuf_Empty()
    }

    /// An HCI reset of the same controller ("Previous bonds must not be removed and the gRPC server must not be
    /// restarted"): the links end (WaitDisconnection and WaitConnectionUpdate return), advertising and scanning stop
    /// (their streams end), WaitConnection may return a link again; the address and the bonds stay.
    func reset(request: Google_Protobuf_Empty, context: ServerContext) async throws -> Google_Protobuf_Empty {
        try await device.reset()
        return Google_Protobuf_Empty()
    }

    func readLocalAddress(request: Google_Protobuf_Empty, context: ServerContext) async throws -> Pandora_ReadLocalAddressResponse {
        let adapter = try await device.current().adapter
        // The controller's public address; a controller without one has only the host's random static identity.
        let publicAddress = await adapter.capabilities.publicAddress
        let identity = await adapter.address
        guard let address = publicAddress ?? identity?.address else {
            throw RPCError(code: .unavailable, message: "the controller has no address")
        }
        var response = Pandora_ReadLocalAddressResponse()
        response.address = Data(address.bytes)
        return response
    }

    // MARK: Connections

    func connect(request: Pandora_ConnectRequest, context: ServerContext) async throws -> Pandora_ConnectResponse {
        throw Self.brEDR("Connect")
    }

    func waitConnection(request: Pandora_WaitConnectionRequest, context: ServerContext) async throws -> Pandora_WaitConnectionResponse {
        let peer = try Self.address(request.address, "address")
        _ = try await device.current()
        let token = try await device.wait { links in
            links.values.filter {
                $0.isConnected && !$0.waited && ($0.connection.peer.address == peer || $0.security.peerIdentity?.address == peer)
            }
                .min { $0.connection.link < $1.connection.link }?.token
        }
        await device.markWaited(token)
        var response = Pandora_WaitConnectionResponse()
        response.connection = Self.connection(token)
        return response
    }

    func connectLE(request: Pandora_ConnectLERequest, context: ServerContext) async throws -> Pandora_ConnectLEResponse {
        let peer: LEAddress
        switch request.address {
        case .public(let bytes): peer = LEAddress(try Self.address(bytes, "public"), type: .public)
        case .random(let bytes): peer = LEAddress(try Self.address(bytes, "random"), type: .random)
        case .publicIdentity(let bytes): peer = LEAddress(try Self.address(bytes, "public_identity"), type: .publicIdentity)
        case .randomStaticIdentity(let bytes): peer = LEAddress(try Self.address(bytes, "random_static_identity"), type: .randomIdentity)
        case nil: throw RPCError(code: .invalidArgument, message: "ConnectLE needs an address")
        }
        let ownAddress = try Self.ownAddress(request.ownAddressType)
        let central = try await device.current().central
        var response = Pandora_ConnectLEResponse()
        if await device.isConnected(to: peer.address) {
            response.connectionAlreadyExists = Google_Protobuf_Empty()
            return response
        }
        do {
            // No MTU exchange: the link is left as the peer sees it after a bare connection (Bumble does the same).
            let remote = try await central.connect(peer, timeout: .seconds(60), exchangeMTU: false, ownAddress: ownAddress)
            let token = await device.register(await remote.connection, remote: remote)
            response.connection = Self.connection(token)
        } catch let error as HostError {
            switch error.code {
            case .connectionTimedOut: response.peerNotFound = Google_Protobuf_Empty()
            case .connectionFailed(.connectionAlreadyExists): response.connectionAlreadyExists = Google_Protobuf_Empty()
            case .connectionFailed(.pageTimeout), .connectionFailed(.connectionFailedToBeEstablished):
                response.peerNotFound = Google_Protobuf_Empty()
            default: throw RPCError(code: .internalError, message: "ConnectLE to \(peer): \(error)")
            }
        }
        return response
    }

    func waitConnectionUpdate(request: Pandora_WaitConnectionUpdateRequest,
                              context: ServerContext) async throws -> Pandora_WaitConnectionUpdateResponse {
        var response = Pandora_WaitConnectionUpdateResponse()
        let token = request.connection.cookie.value
        guard let link = await device.link(token), link.isConnected else {
            response.connectionNotFound = Google_Protobuf_Empty()
            return response
        }
        let seen = link.updates
        let updated = try await device.wait { links -> PandoraDevice.Link? in
            guard let link = links[token] else { return nil }
            return link.updates > seen || !link.isConnected ? link : nil
        }
        if updated.isConnected {
            response.connectionParameters = Self.parameters(updated.connection)
        } else {
            response.connectionNotFound = Google_Protobuf_Empty()
        }
        return response
    }

    func getConnectionParameters(request: Pandora_GetConnectionParametersRequest,
                                 context: ServerContext) async throws -> Pandora_GetConnectionParametersResponse {
        var response = Pandora_GetConnectionParametersResponse()
        if let link = await device.link(request.connection.cookie.value), link.isConnected {
            response.connectionParameters = Self.parameters(link.connection)
        } else {
            response.connectionNotFound = Google_Protobuf_Empty()
        }
        return response
    }

    func disconnect(request: Pandora_DisconnectRequest, context: ServerContext) async throws -> Google_Protobuf_Empty {
        let token = request.connection.cookie.value
        let stack = try await device.current()
        guard let link = await device.link(token) else {
            throw RPCError(code: .notFound, message: "Disconnect: no connection with this token")
        }
        guard link.isConnected else { return Google_Protobuf_Empty() }
        do {
            if let remote = link.remote {
                try await stack.central.disconnect(remote)
            } else {
                try await stack.peripheral.disconnect(link.connection)
            }
        } catch {
            // The link may have gone down meanwhile; only a link still up is a failure.
            if await device.link(token)?.isConnected == true {
                throw RPCError(code: .internalError, message: "Disconnect: \(error)")
            }
        }
        _ = try await device.wait { links in links[token]?.isConnected == false ? true : nil }
        return Google_Protobuf_Empty()
    }

    func waitDisconnection(request: Pandora_WaitDisconnectionRequest, context: ServerContext) async throws -> Google_Protobuf_Empty {
        let token = request.connection.cookie.value
        // A link the server does not know is not connected: nothing to wait for.
        _ = try await device.wait { links in links[token]?.isConnected != true ? true : nil }
        return Google_Protobuf_Empty()
    }

    // MARK: Advertising and scanning

    func advertise(request: Pandora_AdvertiseRequest, response: RPCWriter<Pandora_AdvertiseResponse>,
                   context: ServerContext) async throws {
        let stack = try await device.current()
        let advertisement = try Self.advertisement(request, deviceName: device.deviceName)
        let resets = await device.resets
        // Subscribed before advertising starts: a central may connect at once.
        let events = await stack.peripheral.centralEvents()
        do {
            if advertisement.isExtended {
                try await stack.peripheral.startAdvertising([advertisement], restartAfterConnection: request.connectable)
            } else {
                try await stack.peripheral.startAdvertising(advertisement, restartAfterConnection: request.connectable)
            }
        } catch {
            throw RPCError(code: .failedPrecondition, message: "Advertise: \(error)")
        }
        // One response per central that connects, until the client cancels the stream or a Reset stops advertising.
        let device = device
        await withTaskGroup(of: Void.self) { group in
            group.addTask { try? await device.waitForReset(after: resets) }
            group.addTask {
                for await event in events {
                    guard request.connectable, case .connected(let connection) = event else { continue }
                    let token = await device.register(connection)
                    var message = Pandora_AdvertiseResponse()
                    message.connection = Self.connection(token)
                    do {
                        try await response.write(message)
                    } catch {
                        break
                    }
                }
            }
            await group.next()
            group.cancelAll()
        }
        // Cancelled (the stream ended): stop, in a task of its own since this one is cancelled.
        await Task { try? await stack.peripheral.stopAdvertising() }.value
    }

    func scan(request: Pandora_ScanRequest, response: RPCWriter<Pandora_ScanningResponse>, context: ServerContext) async throws {
        let ownAddress = try Self.ownAddress(request.ownAddressType)
        var phys: LEPHYs = []
        for phy in request.phys {
            switch phy {
            case .primary1M: phys.insert(.le1M)
            case .primaryCoded: phys.insert(.leCoded)
            case .UNRECOGNIZED(let value): throw RPCError(code: .invalidArgument, message: "phys: unknown primary PHY \(value)")
            }
        }
        let stack = try await device.current()
        let resets = await device.resets
        if phys.isEmpty {
            // Every PHY the controller scans: LE Coded too when it has it (extended scanning and LE Coded).
            phys = await stack.adapter.capabilities.supportsCodedAdvertising ? [.le1M, .leCoded] : .le1M
        }
        let discoveries: AsyncThrowingStream<DiscoveredPeripheral, any Error>
        do {
            discoveries = try await stack.central.scan(allowDuplicates: true, active: !request.passive, phys: phys,
                                                       ownAddress: ownAddress)
        } catch {
            throw RPCError(code: .failedPrecondition, message: "Scan: \(error)")
        }
        do {
            try await forward(discoveries, legacy: request.legacy, passive: request.passive, to: response)
        } catch {
            // A Reset ends the scan: the stream ends as the client's cancellation would.
            if await device.resets != resets { return }
            throw error
        }
    }

    /// Writes the discoveries of a scan as ScanningResponses. An active scan reports a scannable advertisement with
    /// its scan response: it is held until the next report of the same advertiser (and set), which carries the
    /// response merged in when one came (as Bumble's Pandora server reports; a client taking the first report of a
    /// device then sees its scan response data).
    private func forward(_ discoveries: AsyncThrowingStream<DiscoveredPeripheral, any Error>, legacy: Bool, passive: Bool,
                         to response: RPCWriter<Pandora_ScanningResponse>) async throws {
        struct Advertiser: Hashable {
            var address: LEAddress
            var sid: UInt8?
        }
        var held: Set<Advertiser> = []
        let request = (legacy: legacy, passive: passive)
        for try await discovery in discoveries {
            if request.legacy && !discovery.isLegacy { continue }
            if !request.passive && discovery.isScannable {
                let advertiser = Advertiser(address: discovery.address, sid: discovery.advertisingSID)
                guard held.remove(advertiser) != nil else {
                    if held.count >= 4096 { held.removeAll() }  // bounded among address-rotating crowds
                    held.insert(advertiser)
                    continue
                }
            }
            try await response.write(Self.scanningResponse(discovery))
        }
    }

    func inquiry(request: Google_Protobuf_Empty, response: RPCWriter<Pandora_InquiryResponse>, context: ServerContext) async throws {
        throw Self.brEDR("Inquiry")
    }

    func setDiscoverabilityMode(request: Pandora_SetDiscoverabilityModeRequest,
                                context: ServerContext) async throws -> Google_Protobuf_Empty {
        throw Self.brEDR("SetDiscoverabilityMode")
    }

    func setConnectabilityMode(request: Pandora_SetConnectabilityModeRequest,
                               context: ServerContext) async throws -> Google_Protobuf_Empty {
        throw Self.brEDR("SetConnectabilityMode")
    }

    // MARK: Conversions

    static func brEDR(_ call: String) -> RPCError {
        RPCError(code: .unimplemented, message: "\(call) is a BR/EDR procedure: swift-ble is an LE-only host")
    }

    /// The own address an `own_address_type` asks for. PUBLIC: the identity address (public; a controller without
    /// one has only its random static identity). RANDOM: a random static address (with privacy on, the resolvable
    /// private address). RESOLVABLE_OR_PUBLIC: the resolvable private address with privacy on, else the identity.
    /// RESOLVABLE_OR_RANDOM: the resolvable private address with privacy on, else a random static address. The host
    /// makes the private addresses itself, so the controller is told public or random (Core 5.4, Vol 4, Part E,
    /// 7.8.5).
    static func ownAddress(_ type: Pandora_OwnAddressType) throws(RPCError) -> OwnAddress {
        switch type {
        case .public: return .identity
        case .random, .resolvableOrRandom: return .random
        case .resolvableOrPublic: return .resolvableOrIdentity
        case .UNRECOGNIZED(let value): throw RPCError(code: .invalidArgument, message: "own_address_type \(value) is unknown")
        }
    }

    static func address(_ bytes: Data, _ what: String) throws(RPCError) -> BluetoothAddress {
        guard let address = BluetoothAddress(bigEndian: Array(bytes)) else {
            throw RPCError(code: .invalidArgument, message: "\(what): an address has 6 octets, not \(bytes.count)")
        }
        return address
    }

    static func connection(_ token: Data) -> Pandora_Connection {
        var connection = Pandora_Connection()
        connection.cookie.value = token
        return connection
    }

    static func parameters(_ connection: HostConnection) -> Pandora_ConnectionParameters {
        var parameters = Pandora_ConnectionParameters()
        parameters.connectionInterval = UInt32(connection.interval)
        parameters.peripheralLatency = UInt32(connection.latency)
        parameters.supervisionTimeout = UInt32(connection.supervisionTimeout)
        return parameters
    }

    /// The advertisement an AdvertiseRequest asks for. Legacy: connectable (ADV_IND), scannable (ADV_SCAN_IND, when
    /// it has scan response data) or neither (ADV_NONCONN_IND), or with a target ADV_DIRECT_IND (no data). Extended:
    /// connectable, or else scannable when it has scan response data (extended advertising cannot be both, Core 5.4,
    /// Vol 6, Part B, 2.3.4), directed at the target when there is one.
    static func advertisement(_ request: Pandora_AdvertiseRequest, deviceName: String) throws(RPCError) -> Advertisement {
        // `interval` (and `interval_range` above it) are in milliseconds.
        let milliseconds = request.interval > 0 ? Double(request.interval) + Double(max(0, request.intervalRange)) / 2 : 100
        var advertisement = Advertisement(data: AdvertisingData(), interval: .microseconds(Int64(milliseconds * 1000)))
        guard let units = advertisement.intervalUnits else {
            throw RPCError(code: .invalidArgument, message: "interval \(milliseconds) ms is outside 20 ms...10.24 s")
        }
        let context = DataTypesCodec.Context(deviceName: deviceName, intervalUnits: units)
        advertisement.data = try DataTypesCodec.advertisingData(request.data, context: context)
        advertisement.scanResponse = try DataTypesCodec.advertisingData(request.scanResponseData, context: context)
        let scannable = request.hasScanResponseData
        advertisement.kind = request.connectable ? .connectable : scannable ? .scannable : .nonConnectable
        advertisement.isExtended = !request.legacy
        advertisement.ownAddress = try ownAddress(request.ownAddressType)
        switch request.target {
        case .public(let bytes): advertisement.target = LEAddress(try address(bytes, "public"), type: .public)
        case .random(let bytes): advertisement.target = LEAddress(try address(bytes, "random"), type: .random)
        case nil: break
        }
        // Legacy directed advertising is ADV_DIRECT_IND: connectable, whatever `connectable` says (as Bumble's server).
        if request.legacy && advertisement.target != nil { advertisement.kind = .connectable }
        if request.legacy {
            guard request.primaryPhy == .primary1M, request.secondaryPhy == .secondaryNone else {
                throw RPCError(code: .invalidArgument, message: "legacy advertising is on LE 1M only (no primary_phy or secondary_phy)")
            }
        } else {
            switch request.primaryPhy {
            case .primary1M: advertisement.primaryPHY = .le1M
            case .primaryCoded: advertisement.primaryPHY = .leCoded
            case .UNRECOGNIZED(let value): throw RPCError(code: .invalidArgument, message: "primary_phy \(value) is unknown")
            }
            switch request.secondaryPhy {
            case .secondaryNone: advertisement.secondaryPHY = nil
            case .secondary1M: advertisement.secondaryPHY = .le1M
            case .secondary2M: advertisement.secondaryPHY = .le2M
            case .secondaryCoded: advertisement.secondaryPHY = .leCoded
            case .UNRECOGNIZED(let value): throw RPCError(code: .invalidArgument, message: "secondary_phy \(value) is unknown")
            }
        }
        return advertisement
    }

    static func scanningResponse(_ discovery: DiscoveredPeripheral) -> Pandora_ScanningResponse {
        var message = Pandora_ScanningResponse()
        message.legacy = discovery.isLegacy
        message.connectable = discovery.isConnectable
        message.scannable = discovery.isScannable
        message.truncated = discovery.isTruncated
        message.sid = UInt32(discovery.advertisingSID ?? 0)
        message.primaryPhy = discovery.primaryPHY == .leCoded ? .primaryCoded : .primary1M
        message.secondaryPhy = switch discovery.secondaryPHY {
        case .le1M?: .secondary1M
        case .le2M?: .secondary2M
        case .leCoded?: .secondaryCoded
        default: .secondaryNone
        }
        // 127: "not available", as HCI reports an advertisement without TX power.
        message.txPower = Int32(discovery.txPower ?? 127)
        message.rssi = Int32(discovery.rssi)
        message.data = DataTypesCodec.dataTypes(discovery.advertisementData)
        let bytes = Data(discovery.address.address.bytes)
        switch discovery.address.type {
        case .public: message.public = bytes
        case .publicIdentity: message.publicIdentity = bytes
        case .randomIdentity: message.randomStaticIdentity = bytes
        default: message.random = bytes
        }
        return message
    }
}
