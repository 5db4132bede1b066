import Crypto

/// What a client asks of a Bluetooth proxy, once the session's own business (hello, device information, entities,
/// ping, disconnect) is taken care of by the session.
public enum ESPHomeAPIRequest: Sendable, Hashable {
    /// Send advertisements (`flags` bit 0: raw).
    case subscribeAdvertisements(flags: UInt32)
    /// Stop sending advertisements.
    case unsubscribeAdvertisements
    /// Connect, disconnect, pair, unpair or clear a cache.
    case device(BluetoothDeviceRequest)
    /// List a connected device's services.
    case getServices(BluetoothGATTGetServicesRequest)
    /// Read a characteristic.
    case read(BluetoothGATTReadRequest)
    /// Write a characteristic.
    case write(BluetoothGATTWriteRequest)
    /// Read a descriptor.
    case readDescriptor(BluetoothGATTReadDescriptorRequest)
    /// Write a descriptor.
    case writeDescriptor(BluetoothGATTWriteDescriptorRequest)
    /// Turn notifications on or off.
    case notify(BluetoothGATTNotifyRequest)
    /// Send the free connection slots now and when they change.
    case subscribeConnectionsFree
    /// Scan passively (0) or actively (1).
    case setScannerMode(UInt32)
    /// Set a connection's parameters.
    case setConnectionParameters(BluetoothSetConnectionParamsRequest)
}

/// The server side of one ESPHome native API connection as a machine without I/O, clocks or randomness: the driver
/// hands it bytes and the time, and carries out the ``Action``s it returns. It does the framing (plaintext, or the
/// Noise handshake and encrypted frames), answers hello, device information, entity listing, pings and disconnects
/// itself, batches raw advertisements, keeps the connection alive, and hands the Bluetooth proxy requests on.
///
/// A malformed frame, a failed handshake or a silent client closes this connection only.
public struct ESPHomeAPIServerSession: Sendable {
    /// How the server answers.
    public struct Configuration: Sendable {
        /// The node name (server hello and ``HelloResponse``).
        public var name: String
        /// The node's MAC address as `AA:BB:CC:DD:EE:FF` (the Noise server hello carries it).
        public var macAddress: String
        /// The device information answered.
        public var deviceInfo: DeviceInfoResponse
        /// The server description in ``HelloResponse``.
        public var serverInfo: String
        /// The 32-byte Noise pre-shared key; `nil`: plaintext.
        public var encryptionKey: [UInt8]?
        /// After this long without a byte from the client a ping is sent; after as long again, the connection closes.
        public var keepAlive: Duration
        /// How long a client may take to complete hello (and the handshake).
        public var helloTimeout: Duration
        /// The most raw advertisements in one message.
        public var advertisementBatchSize: Int
        /// How long an advertisement may wait for its batch to fill.
        public var advertisementFlushInterval: Duration
        /// The largest message body taken.
        public var maximumPayload: Int

        /// Creates a configuration.
        public init(name: String, macAddress: String, deviceInfo: DeviceInfoResponse, serverInfo: String = "swift-ble",
                    encryptionKey: [UInt8]?, keepAlive: Duration = .seconds(60), helloTimeout: Duration = .seconds(30),
                    advertisementBatchSize: Int = 16, advertisementFlushInterval: Duration = .milliseconds(100),
                    maximumPayload: Int = 65_536) {
            self.name = name
            self.macAddress = macAddress
            self.deviceInfo = deviceInfo
            self.serverInfo = serverInfo
            self.encryptionKey = encryptionKey
            self.keepAlive = keepAlive
            self.helloTimeout = helloTimeout
            self.advertisementBatchSize = max(1, advertisementBatchSize)
            self.advertisementFlushInterval = advertisementFlushInterval
            self.maximumPayload = maximumPayload
        }
    }

    /// What the application hears about.
    public enum Event: Sendable, Hashable {
        /// The client said hello (and, encrypted, completed the handshake): its description.
        case clientReady(String)
        /// A request for the Bluetooth proxy.
        case request(ESPHomeAPIRequest)
        /// The connection was closed or refused (a wrong key, a plaintext client, a malformed frame, silence).
        case closed(String)
    }

    /// What the driver must do.
    public enum Action: Sendable, Hashable {
        /// Write these bytes.
        case send([UInt8])
        /// Close the connection (after the bytes before).
        case close
        /// Tell the application.
        case event(Event)
    }

    /// Waiting for the client's empty hello frame (encrypted protocol).
    public struct NoiseHelloPhase: Sendable {
        var handshake: NoiseNNpsk0Handshake
    }
    /// Waiting for the client's first handshake message.
    public struct NoiseHandshakePhase: Sendable {
        var handshake: NoiseNNpsk0Handshake
    }
    /// Waiting for ``HelloRequest``.
    public struct HelloPhase: Sendable {}
    /// Hello done: requests flow.
    public struct ConnectedPhase: Sendable {
        /// The client's description.
        var clientInfo: String
        var advertisements = false
        var pending: [BluetoothLERawAdvertisement] = []
        var firstPendingAt: Duration = .zero
        var pingSentAt: Duration?
    }
    /// Closed: nothing more happens.
    public struct ClosedPhase: Sendable {
        var reason: String
    }

    /// Where a connection is.
    public enum Phase: Sendable {
        case noiseHello(NoiseHelloPhase)
        case noiseHandshake(NoiseHandshakePhase)
        case hello(HelloPhase)
        case connected(ConnectedPhase)
        case closed(ClosedPhase)
    }

    /// The configuration.
    public let configuration: Configuration
    /// Where the connection is.
    public private(set) var phase: Phase
    private var plaintext: ESPHomeAPIPlaintextDecoder
    private var noise = ESPHomeAPINoiseDecoder()
    private var ciphers: (send: NoiseCipherState, receive: NoiseCipherState)?
    private let openedAt: Duration
    private var lastReceived: Duration

    /// Starts a connection opened at `now`. With an encryption key, `ephemeral` is this side's ephemeral key for the
    /// handshake (a fresh one per connection: the driver makes it).
    public init(_ configuration: Configuration, ephemeral: Curve25519.KeyAgreement.PrivateKey, now: Duration) throws(ESPHomeAPIError) {
        self.configuration = configuration
        plaintext = ESPHomeAPIPlaintextDecoder(maximumPayload: configuration.maximumPayload)
        openedAt = now
        lastReceived = now
        if let key = configuration.encryptionKey {
            phase = .noiseHello(.init(handshake: try NoiseNNpsk0Handshake(role: .responder, psk: key, ephemeral: ephemeral)))
        } else {
            phase = .hello(.init())
        }
    }

    /// Starts a connection with the ephemeral key given as its 32 raw bytes (fixed keys: tests, fuzzing).
    public init(_ configuration: Configuration, ephemeralKey: [UInt8], now: Duration) throws(ESPHomeAPIError) {
        let key: Curve25519.KeyAgreement.PrivateKey
        do { key = try Curve25519.KeyAgreement.PrivateKey(rawRepresentation: ephemeralKey) } catch {
            throw ESPHomeAPIError(.invalidInput, "an ephemeral key of \(ephemeralKey.count) bytes, not 32")
        }
        try self.init(configuration, ephemeral: key, now: now)
    }

    /// Whether the client completed hello and has not gone.
    public var isConnected: Bool {
        if case .connected = phase { return true }
        return false
    }

    /// Whether the client asked for raw advertisements.
    public var wantsAdvertisements: Bool {
        if case .connected(let c) = phase { return c.advertisements }
        return false
    }

    /// Why the connection closed, once it has.
    public var closeReason: String? {
        if case .closed(let c) = phase { return c.reason }
        return nil
    }

    // MARK: Inputs

    /// Bytes arrived from the client.
    public mutating func received(_ bytes: [UInt8], now: Duration) -> [Action] {
        if case .closed = phase { return [] }
        lastReceived = now
        if case .connected(var c) = phase, c.pingSentAt != nil {
            c.pingSentAt = nil
            phase = .connected(c)
        }
        if configuration.encryptionKey == nil {
            let frames: [ESPHomeAPIFrame]
            do { frames = try plaintext.push(bytes) } catch { return close(error.reason) }
            return handle(frames, now: now)
        }
        let bodies: [[UInt8]]
        do { bodies = try noise.push(bytes) } catch {
            // ESPHome answers a bad indicator with a handshake rejection, which tells a plaintext client to use encryption.
            return reject(error.reason, explanation: "Bad indicator byte")
        }
        var actions: [Action] = []
        for body in bodies {
            actions += noiseBody(body, now: now)
            if case .closed = phase { break }
        }
        return actions
    }

    /// The connection dropped (or the driver closed it).
    public mutating func connectionClosed(reason: String) -> [Action] {
        if case .closed = phase { return [] }
        phase = .closed(.init(reason: reason))
        return [.event(.closed(reason))]
    }

    /// Time passed: the hello timeout, keep-alive pings, the advertisement batch.
    public mutating func tick(now: Duration) -> [Action] {
        switch phase {
        case .closed:
            return []
        case .noiseHello, .noiseHandshake, .hello:
            return now - openedAt >= configuration.helloTimeout ? close("no hello within \(configuration.helloTimeout)") : []
        case .connected(var c):
            var actions: [Action] = []
            if let ping = c.pingSentAt {
                if now - ping >= configuration.keepAlive { return close("no answer to a ping within \(configuration.keepAlive)") }
            } else if now - lastReceived >= configuration.keepAlive {
                c.pingSentAt = now
                phase = .connected(c)
                actions += frame(PingRequest())
            }
            if case .connected(var c) = phase, !c.pending.isEmpty, now - c.firstPendingAt >= configuration.advertisementFlushInterval {
                let batch = c.pending
                c.pending = []
                phase = .connected(c)
                actions += frame(BluetoothLERawAdvertisementsResponse(advertisements: batch))
            }
            return actions
        }
    }

    /// When ``tick(now:)`` next has something to do.
    public var nextDeadline: Duration? {
        switch phase {
        case .closed: return nil
        case .noiseHello, .noiseHandshake, .hello: return openedAt + configuration.helloTimeout
        case .connected(let c):
            let alive = (c.pingSentAt ?? lastReceived) + configuration.keepAlive
            return c.pending.isEmpty ? alive : min(alive, c.firstPendingAt + configuration.advertisementFlushInterval)
        }
    }

    /// Sends a message to the client (nothing before hello or after closing).
    public mutating func send(_ message: some ESPHomeAPIMessage) -> [Action] {
        guard isConnected else { return [] }
        return frame(message)
    }

    /// Queues raw advertisements for the client when it asked for them: a full batch goes at once, the rest when the
    /// flush interval has passed (``tick(now:)``).
    public mutating func advertise(_ advertisements: [BluetoothLERawAdvertisement], now: Duration) -> [Action] {
        guard case .connected(var c) = phase, c.advertisements else { return [] }
        var actions: [Action] = []
        for a in advertisements {
            if c.pending.isEmpty { c.firstPendingAt = now }
            c.pending.append(a)
            if c.pending.count >= configuration.advertisementBatchSize {
                let batch = c.pending
                c.pending = []
                phase = .connected(c)
                actions += frame(BluetoothLERawAdvertisementsResponse(advertisements: batch))
            }
        }
        phase = .connected(c)
        return actions
    }

    /// Closes the connection from this side (ESPHome sends DisconnectRequest first).
    public mutating func disconnect(reason: String) -> [Action] {
        guard case .connected = phase else { return close(reason) }
        return frame(DisconnectRequest()) + close(reason)
    }

    // MARK: Inside

    private mutating func close(_ reason: String) -> [Action] {
        if case .closed = phase { return [] }
        phase = .closed(.init(reason: reason))
        return [.close, .event(.closed(reason))]
    }

    /// Refuses a handshake with ESPHome's explicit rejection frame (`0x01` and an explanation), then closes.
    private mutating func reject(_ reason: String, explanation: String) -> [Action] {
        let body = [UInt8(0x01)] + Array(explanation.utf8)
        let bytes = (try? ESPHomeAPINoiseFraming.encode(body)) ?? []
        return [.send(bytes)] + close(reason)
    }

    private mutating func noiseBody(_ body: [UInt8], now: Duration) -> [Action] {
        switch phase {
        case .closed:
            return []
        case .noiseHello(let p):
            // The client's hello frame is empty; ESPHome answers with the chosen protocol (1), the name and the MAC.
            guard body.isEmpty else { return reject("the client hello was not empty", explanation: "Bad hello") }
            phase = .noiseHandshake(.init(handshake: p.handshake))
            let hello = [UInt8(0x01)] + Array(configuration.name.utf8) + [0] + Array(configuration.macAddress.utf8) + [0]
            return [.send((try? ESPHomeAPINoiseFraming.encode(hello)) ?? [])]
        case .noiseHandshake(var p):
            guard body.first == 0x00 else { return reject("the handshake frame does not start with 0", explanation: "Bad handshake packet") }
            do {
                try p.handshake.readMessage1(Array(body.dropFirst()))
                let (message, send, receive) = try p.handshake.writeMessage2()
                ciphers = (send, receive)
                phase = .hello(.init())
                return [.send(try ESPHomeAPINoiseFraming.encode([0x00] + message))]
            } catch {
                // The tag of the first message covers the pre-shared key: a failure is a wrong key (or an altered frame).
                return reject("handshake failed: \(error.reason) (a client with a different key)", explanation: "Handshake MAC failure")
            }
        case .hello, .connected:
            guard var c = ciphers else { return close("an encrypted frame before the handshake") }
            let frame: ESPHomeAPIFrame
            do { frame = try ESPHomeAPINoiseFraming.parseInner(try c.receive.decrypt(body)) } catch { return close(error.reason) }
            ciphers = c
            return handle([frame], now: now)
        }
    }

    private mutating func handle(_ frames: [ESPHomeAPIFrame], now: Duration) -> [Action] {
        var actions: [Action] = []
        for f in frames {
            actions += handle(f, now: now)
            if case .closed = phase { break }
        }
        return actions
    }

    private mutating func handle(_ f: ESPHomeAPIFrame, now: Duration) -> [Action] {
        let message: (any ESPHomeAPIMessage)?
        do { message = try ESPHomeAPIMessages.decode(type: f.type, payload: f.payload, from: ESPHomeAPIMessages.fromClient) } catch {
            return close("message type \(f.type) is malformed: \(error.reason)")
        }
        guard let message else { return [] }   // a type this server does not handle: skipped, as ESPHome does
        if case .hello = phase {
            switch message {
            case let hello as HelloRequest:
                phase = .connected(.init(clientInfo: hello.clientInfo))
                return frame(HelloResponse(apiVersionMajor: 1, apiVersionMinor: 12, serverInfo: configuration.serverInfo, name: configuration.name))
                    + [.event(.clientReady(hello.clientInfo))]
            case is PingRequest:
                return frameAnyPhase(PingResponse())
            case is DisconnectRequest:
                return frameAnyPhase(DisconnectResponse()) + close("the client disconnected")
            default:
                return close("message type \(f.type) before hello")
            }
        }
        guard case .connected(var c) = phase else { return [] }
        switch message {
        case is HelloRequest: return []
        case is AuthenticationRequest: return frame(AuthenticationResponse(invalidPassword: false))
        case is DisconnectRequest: return frame(DisconnectResponse()) + close("the client disconnected")
        case is DisconnectResponse: return close("the client confirmed the disconnection")
        case is PingRequest: return frame(PingResponse())
        case is PingResponse: return []
        case is DeviceInfoRequest: return frame(configuration.deviceInfo)
        case is ListEntitiesRequest: return frame(ListEntitiesDoneResponse())
        // A proxy has no entities, logs to stream, actions or states to watch, and keeps no time: these are taken
        // and nothing follows, as on a node without such components.
        case is SubscribeStatesRequest, is SubscribeLogsRequest, is SubscribeHomeassistantServicesRequest,
             is SubscribeHomeAssistantStatesRequest, is GetTimeRequest, is GetTimeResponse:
            return []
        case let m as SubscribeBluetoothLEAdvertisementsRequest:
            c.advertisements = true
            phase = .connected(c)
            return [.event(.request(.subscribeAdvertisements(flags: m.flags)))]
        case is UnsubscribeBluetoothLEAdvertisementsRequest:
            c.advertisements = false
            c.pending = []
            phase = .connected(c)
            return [.event(.request(.unsubscribeAdvertisements))]
        case let m as BluetoothDeviceRequest: return [.event(.request(.device(m)))]
        case let m as BluetoothGATTGetServicesRequest: return [.event(.request(.getServices(m)))]
        case let m as BluetoothGATTReadRequest: return [.event(.request(.read(m)))]
        case let m as BluetoothGATTWriteRequest: return [.event(.request(.write(m)))]
        case let m as BluetoothGATTReadDescriptorRequest: return [.event(.request(.readDescriptor(m)))]
        case let m as BluetoothGATTWriteDescriptorRequest: return [.event(.request(.writeDescriptor(m)))]
        case let m as BluetoothGATTNotifyRequest: return [.event(.request(.notify(m)))]
        case is SubscribeBluetoothConnectionsFreeRequest: return [.event(.request(.subscribeConnectionsFree))]
        case let m as BluetoothScannerSetModeRequest: return [.event(.request(.setScannerMode(m.mode)))]
        case let m as BluetoothSetConnectionParamsRequest: return [.event(.request(.setConnectionParameters(m)))]
        default: return []
        }
    }

    private mutating func frame(_ message: some ESPHomeAPIMessage) -> [Action] {
        guard isConnected else { return [] }
        return frameAnyPhase(message)
    }

    private mutating func frameAnyPhase(_ message: some ESPHomeAPIMessage) -> [Action] {
        let f = ESPHomeAPIFrame(message)
        guard var c = ciphers else { return [.send(ESPHomeAPIPlaintextFraming.encode(f))] }
        do {
            let bytes = try ESPHomeAPINoiseFraming.encode(try c.send.encrypt(try ESPHomeAPINoiseFraming.inner(f)))
            ciphers = c
            return [.send(bytes)]
        } catch {
            return close("could not send message type \(f.type): \(error.reason)")
        }
    }
}
