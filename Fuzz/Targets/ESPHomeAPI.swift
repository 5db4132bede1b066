import ESPHomeAPI

// The ESPHome native API server fed bytes from a client. The first byte chooses the framing (bit 7: encrypted,
// with a fixed pre-shared key and fixed ephemeral keys, so that the seeds' handshake and encrypted frames are valid)
// and the chunk size (low five bits + 1). Invariants:
// - `ESPHomeAPIPlaintextDecoder`: the stream pushed at once and in chunks gives the same error, and without an error
//   the same frames; every frame of a known client type that decodes re-encodes to a message that decodes equal;
// - `ESPHomeAPIServerSession` (fed the chunks with ticks between them): every byte it sends is whole frames of its
//   framing (plaintext frames decode; encrypted frames are 0x01 + length with the length right); once closed it
//   sends nothing more; nothing traps.
enum ESPHomeAPIFuzz {
    static let psk = Array(UInt8(0)..<32)
    static let serverEphemeral = [UInt8](repeating: 0x22, count: 32)
    static let clientEphemeral = [UInt8](repeating: 0x11, count: 32)

    static func run(_ bytes: [UInt8]) {
        guard let first = bytes.first else { return }
        let encrypted = first & 0x80 != 0
        let chunkSize = Int(first & 0x1F) + 1
        let stream = Array(bytes.dropFirst())

        if !encrypted {
            let whole = frames(stream, chunkSize: stream.count)
            let chunked = frames(stream, chunkSize: chunkSize)
            if whole.error == nil && chunked.error == nil {
                invariant(whole.frames == chunked.frames, "chunks of \(chunkSize) changed the frames")
            }
            invariant(whole.error == chunked.error, "chunks of \(chunkSize) changed the error: \(String(describing: whole.error)) / \(String(describing: chunked.error))")
            for frame in whole.frames { roundTrip(frame) }
        }

        guard var session = try? ESPHomeAPIServerSession(configuration(encrypted: encrypted), ephemeralKey: serverEphemeral, now: .zero) else {
            invariant(false, "the session could not be made")
            return
        }
        var now = Duration.zero
        var offset = 0
        var round = 0
        while offset < stream.count {
            let end = min(stream.count, offset + chunkSize)
            let wasClosed = session.closeReason != nil
            let actions = session.received(Array(stream[offset..<end]), now: now)
            invariant(!wasClosed || actions.isEmpty, "a closed session acted: \(actions)")
            check(actions, encrypted: encrypted)
            offset = end
            round += 1
            now += .seconds(round % 5 == 0 ? 25 : 0) + .milliseconds(60)
            check(session.tick(now: now), encrypted: encrypted)
            if round % 4 == 0 {
                check(session.advertise([.init(address: UInt64(round), rssi: -60, addressType: 1, data: [2, 1, 6])], now: now), encrypted: encrypted)
            }
        }
        _ = session.connectionClosed(reason: "end of input")
        invariant(session.closeReason != nil, "the session is not closed after the connection closed")
    }

    static func configuration(encrypted: Bool) -> ESPHomeAPIServerSession.Configuration {
        .init(name: "fuzz", macAddress: "00:11:22:33:44:55",
              deviceInfo: DeviceInfoResponse(name: "fuzz", bluetoothProxyFeatureFlags: 0x7F), encryptionKey: encrypted ? psk : nil,
              keepAlive: .seconds(20), helloTimeout: .seconds(60), advertisementBatchSize: 3, maximumPayload: 4096)
    }

    static func frames(_ stream: [UInt8], chunkSize: Int) -> (frames: [ESPHomeAPIFrame], error: ESPHomeAPIError?) {
        var decoder = ESPHomeAPIPlaintextDecoder(maximumPayload: 4096)
        var frames: [ESPHomeAPIFrame] = []
        var offset = 0
        repeat {
            let end = min(stream.count, offset + max(1, chunkSize))
            do {
                frames += try decoder.push(stream[offset..<end])
            } catch {
                return (frames, error)
            }
            offset = end
        } while offset < stream.count
        return (frames, nil)
    }

    /// A client message that decodes survives its encoding.
    static func roundTrip(_ frame: ESPHomeAPIFrame) {
        guard let message = try? ESPHomeAPIMessages.decode(type: frame.type, payload: frame.payload, from: ESPHomeAPIMessages.fromClient) else { return }
        let encoded = message.encoded()
        guard let again = try? ESPHomeAPIMessages.decode(type: frame.type, payload: encoded, from: ESPHomeAPIMessages.fromClient) else {
            invariant(false, "the encoding of \(message) does not decode")
            return
        }
        invariant(again.encoded() == encoded, "the encoding of \(message) is not stable")
    }

    /// What the session sends is whole frames of its framing.
    static func check(_ actions: [ESPHomeAPIServerSession.Action], encrypted: Bool) {
        for case .send(let bytes) in actions {
            if encrypted {
                var decoder = ESPHomeAPINoiseDecoder()
                let bodies = try? decoder.push(bytes)
                invariant(bodies?.count == 1 && bytes.count == 3 + (bodies?.first?.count ?? -3), "the session sent bytes that are not one frame: \(bytes)")
            } else {
                var decoder = ESPHomeAPIPlaintextDecoder()
                let frames = try? decoder.push(bytes)
                invariant(frames?.count == 1, "the session sent bytes that are not one frame: \(bytes)")
                if let frame = frames?.first {
                    invariant((try? ESPHomeAPIMessages.decode(type: frame.type, payload: frame.payload, from: ESPHomeAPIMessages.fromServer)) != nil,
                              "the session sent message type \(frame.type), which does not decode")
                }
            }
        }
    }

    /// A client's streams: plaintext sessions, and encrypted ones made by an initiator with the fixed keys (the
    /// handshake and the encrypted frames are what the session expects); the first byte of each is the mode.
    static func seeds() -> [[UInt8]] {
        let messages: [any ESPHomeAPIMessage] = [
            HelloRequest(clientInfo: "fuzz", apiVersionMajor: 1, apiVersionMinor: 10), DeviceInfoRequest(), ListEntitiesRequest(),
            SubscribeStatesRequest(), SubscribeLogsRequest(level: 3), PingRequest(), SubscribeBluetoothLEAdvertisementsRequest(flags: 1),
            SubscribeBluetoothConnectionsFreeRequest(), BluetoothDeviceRequest(address: 0x005B_0000_0001, requestType: .connectV3WithoutCache, addressType: 0),
            BluetoothGATTGetServicesRequest(address: 0x005B_0000_0001), BluetoothGATTReadRequest(address: 0x005B_0000_0001, handle: 3),
            BluetoothGATTWriteRequest(address: 0x005B_0000_0001, handle: 5, response: true, data: [1, 2, 3]),
            BluetoothGATTNotifyRequest(address: 0x005B_0000_0001, handle: 7, enable: true),
            BluetoothGATTWriteDescriptorRequest(address: 0x005B_0000_0001, handle: 8, data: [1, 0]),
            BluetoothScannerSetModeRequest(mode: 0), UnsubscribeBluetoothLEAdvertisementsRequest(), DisconnectRequest(),
        ]
        let frames = messages.map { ESPHomeAPIFrame(type: type(of: $0).typeID, payload: $0.encoded()) }
        var seeds: [[UInt8]] = []
        // Plaintext: the whole session, the hello alone, and a few requests with an unknown type between them.
        seeds.append([0x07] + frames.flatMap(ESPHomeAPIPlaintextFraming.encode))
        seeds.append([0x00] + ESPHomeAPIPlaintextFraming.encode(frames[0]))
        seeds.append([0x1F] + ESPHomeAPIPlaintextFraming.encode(frames[0]) + ESPHomeAPIPlaintextFraming.encode(.init(type: 500, payload: [8, 1]))
                     + frames[10...12].flatMap(ESPHomeAPIPlaintextFraming.encode))
        // Encrypted: the handshake, then the messages; and the handshake alone.
        if let encrypted = encryptedStream(frames) {
            seeds.append([0x80 | 0x1F] + encrypted)
            seeds.append([0x80 | 0x02] + encrypted)
            seeds.append([0x80 | 0x1F] + encrypted.prefix(3 + 3 + 1 + NoiseNNpsk0Handshake.messageLength))
        }
        return seeds
    }

    static func encryptedStream(_ frames: [ESPHomeAPIFrame]) -> [UInt8]? {
        guard var initiator = try? NoiseNNpsk0Handshake(role: .initiator, psk: psk, ephemeralKey: clientEphemeral),
              let m1 = try? initiator.writeMessage1(),
              var responder = try? NoiseNNpsk0Handshake(role: .responder, psk: psk, ephemeralKey: serverEphemeral) else { return nil }
        // The responder's answer, to learn the initiator's transport keys.
        guard (try? responder.readMessage1(m1)) != nil, let m2 = try? responder.writeMessage2(),
              var ciphers = try? initiator.readMessage2(m2.message) else { return nil }
        var out = (try? ESPHomeAPINoiseFraming.encode([])) ?? []
        out += (try? ESPHomeAPINoiseFraming.encode([0] + m1)) ?? []
        for frame in frames {
            guard let inner = try? ESPHomeAPINoiseFraming.inner(frame), let sealed = try? ciphers.send.encrypt(inner),
                  let framed = try? ESPHomeAPINoiseFraming.encode(sealed) else { return nil }
            out += framed
        }
        return out
    }
}
