import Crypto
import ESPHomeAPI
import Testing

/// A client written in the test (plaintext or Noise initiator) that talks to the session machine.
struct TestClient {
    var handshake: NoiseNNpsk0Handshake?
    var ciphers: (send: NoiseCipherState, receive: NoiseCipherState)?
    var noise = ESPHomeAPINoiseDecoder()
    var plain = ESPHomeAPIPlaintextDecoder()
    var serverHello: [UInt8]?
    var rejection: String?

    init(psk: [UInt8]?) throws {
        handshake = try psk.map { try NoiseNNpsk0Handshake(role: .initiator, psk: $0, ephemeral: .init()) }
    }

    /// The opening bytes: ESPHome's empty client hello and the first handshake message in one write.
    mutating func opening() throws -> [UInt8] {
        guard var h = handshake else { return [] }
        let m1 = try h.writeMessage1()
        handshake = h
        return try ESPHomeAPINoiseFraming.encode([]) + ESPHomeAPINoiseFraming.encode([0] + m1)
    }

    mutating func encode(_ message: some ESPHomeAPIMessage) throws -> [UInt8] {
        let frame = ESPHomeAPIFrame(message)
        guard var c = ciphers else { return ESPHomeAPIPlaintextFraming.encode(frame) }
        let bytes = try ESPHomeAPINoiseFraming.encode(try c.send.encrypt(try ESPHomeAPINoiseFraming.inner(frame)))
        ciphers = c
        return bytes
    }

    /// Takes what the server sent and returns the messages in it.
    mutating func receive(_ actions: [ESPHomeAPIServerSession.Action]) throws -> [any ESPHomeAPIMessage] {
        var out: [any ESPHomeAPIMessage] = []
        for case .send(let bytes) in actions {
            var frames: [ESPHomeAPIFrame] = []
            if handshake == nil {
                frames = try plain.push(bytes)
            } else {
                for body in try noise.push(bytes) {
                    if serverHello == nil {
                        serverHello = body
                    } else if ciphers == nil {
                        if body.first == 1 { rejection = String(decoding: body.dropFirst(), as: UTF8.self); continue }
                        var h = try #require(handshake)
                        ciphers = try h.readMessage2(Array(body.dropFirst()))
                    } else if var c = ciphers {
                        frames.append(try ESPHomeAPINoiseFraming.parseInner(try c.receive.decrypt(body)))
                        ciphers = c
                    }
                }
            }
            for f in frames {
                if let m = try ESPHomeAPIMessages.decode(type: f.type, payload: f.payload, from: ESPHomeAPIMessages.fromServer) { out.append(m) }
            }
        }
        return out
    }
}

func events(_ actions: [ESPHomeAPIServerSession.Action]) -> [ESPHomeAPIServerSession.Event] {
    actions.compactMap { if case .event(let e) = $0 { e } else { nil } }
}

/// The connection machine, driven synchronously with injected time.
@Suite struct ESPHomeAPIServerSessionTests {
    let psk = Array(UInt8(100)..<132)

    func configuration(key: [UInt8]?) -> ESPHomeAPIServerSession.Configuration {
        .init(name: "ble-proxy", macAddress: "AA:BB:CC:DD:EE:FF",
              deviceInfo: DeviceInfoResponse(name: "ble-proxy", macAddress: "AA:BB:CC:DD:EE:FF", bluetoothProxyFeatureFlags: 0x7F,
                                             bluetoothMACAddress: "AA:BB:CC:DD:EE:FF", apiEncryptionSupported: key != nil),
              encryptionKey: key, keepAlive: .seconds(20))
    }

    /// A session and a client that completed hello.
    func connected(key: [UInt8]?) throws -> (ESPHomeAPIServerSession, TestClient) {
        var session = try ESPHomeAPIServerSession(configuration(key: key), ephemeral: .init(), now: .zero)
        var client = try TestClient(psk: key)
        if key != nil {
            #expect(try client.receive(session.received(try client.opening(), now: .zero)).isEmpty)
            #expect(client.serverHello == [1] + Array("ble-proxy".utf8) + [0] + Array("AA:BB:CC:DD:EE:FF".utf8) + [0])
            #expect(client.ciphers != nil)
        }
        let actions = session.received(try client.encode(HelloRequest(clientInfo: "test client")), now: .zero)
        let replies = try client.receive(actions)
        let hello = try #require(replies.first as? HelloResponse)
        #expect(hello.name == "ble-proxy" && hello.apiVersionMajor == 1)
        #expect(events(actions) == [.clientReady("test client")])
        #expect(session.isConnected)
        return (session, client)
    }

    @Test(arguments: [false, true])
    func helloDeviceInfoEntitiesAndPing(encrypted: Bool) throws {
        var (session, client) = try connected(key: encrypted ? psk : nil)
        var bytes = try client.encode(DeviceInfoRequest())
        bytes += try client.encode(ListEntitiesRequest())
        bytes += try client.encode(SubscribeStatesRequest())
        bytes += try client.encode(SubscribeLogsRequest(level: 3))
        bytes += try client.encode(PingRequest())
        let replies = try client.receive(session.received(bytes, now: .seconds(1)))
        #expect(replies.count == 3)
        let info = try #require(replies.first as? DeviceInfoResponse)
        #expect(info.bluetoothProxyFeatureFlags == 0x7F && info.apiEncryptionSupported == encrypted)
        #expect(replies[1] is ListEntitiesDoneResponse)
        #expect(replies[2] is PingResponse)
    }

    @Test func bluetoothRequestsAreHandedOn() throws {
        var (session, client) = try connected(key: psk)
        var bytes = try client.encode(SubscribeBluetoothLEAdvertisementsRequest(flags: 1))
        bytes += try client.encode(BluetoothDeviceRequest(address: 0x1234, requestType: .connectV3WithCache, addressType: 0))
        bytes += try client.encode(BluetoothGATTReadRequest(address: 0x1234, handle: 3))
        bytes += try client.encode(SubscribeBluetoothConnectionsFreeRequest())
        bytes += try client.encode(BluetoothScannerSetModeRequest(mode: 1))
        let params = BluetoothSetConnectionParamsRequest(address: 0x1234, minInterval: 24, maxInterval: 40, latency: 0, timeout: 400)
        bytes += try client.encode(params)
        let e = events(session.received(bytes, now: .seconds(1)))
        #expect(e == [.request(.subscribeAdvertisements(flags: 1)),
                      .request(.device(.init(address: 0x1234, requestType: .connectV3WithCache, addressType: 0))),
                      .request(.read(.init(address: 0x1234, handle: 3))), .request(.subscribeConnectionsFree), .request(.setScannerMode(1)),
                      .request(.setConnectionParameters(params))])
        #expect(session.wantsAdvertisements)
    }

    @Test func advertisementsGoInBatchesOrAfterTheInterval() throws {
        var (session, client) = try connected(key: nil)
        // Not subscribed: nothing is queued.
        #expect(session.advertise([.init(address: 1, rssi: -50, addressType: 0, data: [2, 1, 6])], now: .seconds(1)).isEmpty)
        _ = session.received(try client.encode(SubscribeBluetoothLEAdvertisementsRequest(flags: 1)), now: .seconds(1))
        let sixteen = (0..<16).map { BluetoothLERawAdvertisement(address: UInt64($0), rssi: -60, addressType: 1, data: [UInt8($0)]) }
        let full = try client.receive(session.advertise(sixteen, now: .seconds(2)))
        #expect((full.first as? BluetoothLERawAdvertisementsResponse)?.advertisements == sixteen)
        #expect(session.advertise([sixteen[0]], now: .seconds(3)).isEmpty)
        #expect(session.nextDeadline == .seconds(3) + .milliseconds(100))
        #expect(session.tick(now: .seconds(3) + .milliseconds(99)).isEmpty)
        let late = try client.receive(session.tick(now: .seconds(3) + .milliseconds(100)))
        #expect((late.first as? BluetoothLERawAdvertisementsResponse)?.advertisements == [sixteen[0]])
        _ = session.received(try client.encode(UnsubscribeBluetoothLEAdvertisementsRequest()), now: .seconds(4))
        #expect(session.advertise(sixteen, now: .seconds(4)).isEmpty)
    }

    @Test func keepAlivePingsThenCloses() throws {
        var (session, client) = try connected(key: psk)
        #expect(session.tick(now: .seconds(19)).isEmpty)
        let ping = try client.receive(session.tick(now: .seconds(20)))
        #expect(ping.first is PingRequest)
        // The client answers: the connection lives on and the next ping is due 20 s later.
        _ = session.received(try client.encode(PingResponse()), now: .seconds(21))
        #expect(session.nextDeadline == .seconds(41))
        _ = session.tick(now: .seconds(41))
        let end = session.tick(now: .seconds(61))
        #expect(end.contains(.close))
        #expect(session.closeReason?.contains("ping") == true)
    }

    @Test func helloTimeout() throws {
        var session = try ESPHomeAPIServerSession(configuration(key: psk), ephemeral: .init(), now: .seconds(5))
        #expect(session.tick(now: .seconds(34)).isEmpty)
        #expect(session.tick(now: .seconds(35)).contains(.close))
    }

    @Test func aWrongKeyIsRefusedWithESPHomesExplanation() throws {
        var session = try ESPHomeAPIServerSession(configuration(key: psk), ephemeral: .init(), now: .zero)
        var wrong = psk
        wrong[31] ^= 0xFF
        var client = try TestClient(psk: wrong)
        let actions = session.received(try client.opening(), now: .zero)
        _ = try client.receive(actions)
        #expect(client.rejection == "Handshake MAC failure")
        #expect(client.ciphers == nil)
        #expect(actions.contains(.close))
        #expect(session.closeReason?.contains("different key") == true)
    }

    @Test func aPlaintextClientOfAnEncryptedServerIsRefused() throws {
        var session = try ESPHomeAPIServerSession(configuration(key: psk), ephemeral: .init(), now: .zero)
        var client = try TestClient(psk: nil)
        let actions = session.received(try client.encode(HelloRequest(clientInfo: "plain")), now: .zero)
        #expect(actions.first == .send(try ESPHomeAPINoiseFraming.encode([1] + Array("Bad indicator byte".utf8))))
        #expect(actions.contains(.close))
        #expect(!session.isConnected)
    }

    @Test func anEncryptedClientOfAPlaintextServerIsRefused() throws {
        var session = try ESPHomeAPIServerSession(configuration(key: nil), ephemeral: .init(), now: .zero)
        var client = try TestClient(psk: psk)
        #expect(session.received(try client.opening(), now: .zero).contains(.close))
    }

    @Test func requestsBeforeHelloClose() throws {
        var session = try ESPHomeAPIServerSession(configuration(key: nil), ephemeral: .init(), now: .zero)
        var client = try TestClient(psk: nil)
        let actions = session.received(try client.encode(BluetoothGATTReadRequest(address: 1, handle: 1)), now: .zero)
        #expect(actions.contains(.close))
        #expect(events(actions).isEmpty == false)
    }

    @Test func aMalformedMessageClosesTheConnection() throws {
        var (session, _) = try connected(key: nil)
        // A read request whose body declares a field running past its end.
        let frame = ESPHomeAPIPlaintextFraming.encode(ESPHomeAPIFrame(type: 73, payload: [0x0A, 0x09, 0x01]))
        let actions = session.received(frame, now: .seconds(1))
        #expect(actions.contains(.close))
        #expect(session.closeReason?.contains("malformed") == true)
        #expect(session.received(frame, now: .seconds(2)).isEmpty)
    }

    @Test func aTamperedEncryptedFrameCloses() throws {
        var (session, client) = try connected(key: psk)
        var bytes = try client.encode(PingRequest())
        bytes[5] ^= 1
        #expect(session.received(bytes, now: .seconds(1)).contains(.close))
    }

    @Test func unknownTypesAreSkippedAndDisconnectIsAnswered() throws {
        var (session, client) = try connected(key: nil)
        var bytes = ESPHomeAPIPlaintextFraming.encode(ESPHomeAPIFrame(type: 9999, payload: [1, 2, 3]))
        bytes += try client.encode(DisconnectRequest())
        let actions = session.received(bytes, now: .seconds(1))
        #expect(try client.receive(actions).first is DisconnectResponse)
        #expect(actions.contains(.close))
    }
}
