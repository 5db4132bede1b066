import Crypto
import ESPHomeAPI
import Testing

func hex(_ s: String) -> [UInt8] {
    var out: [UInt8] = []
    var i = s.startIndex
    while i < s.endIndex, let j = s.index(i, offsetBy: 2, limitedBy: s.endIndex), let b = UInt8(s[i..<j], radix: 16) {
        out.append(b)
        i = j
    }
    return out
}

/// Protobuf helpers and messages: round trips, unknown fields skipped, malformed bodies refused with typed errors.
@Suite struct ESPHomeAPICodecTests {
    @Test func varintsAndZigzag() throws {
        var w = ProtoWriter()
        w.uint(1, 300)
        w.sint32(2, -3)
        w.int32(3, -1)
        #expect(w.bytes[0...2] == [0x08, 0xAC, 0x02])
        #expect(w.bytes[3...4] == [0x10, 0x05])   // zigzag(-3) = 5
        #expect(w.bytes.count == 5 + 1 + 10)       // int32 -1 takes ten bytes, as in protobuf
        var r = ProtoReader(w.bytes)
        #expect(try r.next()?.uint() == 300)
        #expect(try r.next()?.sint32() == -3)
        #expect(try r.next()?.int32() == -1)
        #expect(try r.next() == nil)
    }

    @Test func messagesRoundTrip() throws {
        let info = DeviceInfoResponse(name: "proxy", macAddress: "AA:BB:CC:DD:EE:FF", esphomeVersion: "2025.1.0", model: "swift-ble",
                                      manufacturer: "swift-ble", friendlyName: "Proxy", bluetoothProxyFeatureFlags: 0x7F,
                                      bluetoothMACAddress: "11:22:33:44:55:66", apiEncryptionSupported: true)
        #expect(try DeviceInfoResponse(decoding: info.encoded()) == info)
        let ads = BluetoothLERawAdvertisementsResponse(advertisements: [
            .init(address: 0xAABB_CCDD_EEFF, rssi: -70, addressType: 1, data: [2, 1, 6]),
            .init(address: 1, rssi: 0, addressType: 0, data: []),
        ])
        #expect(try BluetoothLERawAdvertisementsResponse(decoding: ads.encoded()) == ads)
        let services = BluetoothGATTGetServicesResponse(address: 42, services: [
            .init(uuid: ESPHomeUUID(high: 0x0000_180F_0000_1000, low: 0x8000_0080_5F9B_34FB), handle: 1, characteristics: [
                .init(uuid: ESPHomeUUID(high: 0x0000_2A19_0000_1000, low: 0x8000_0080_5F9B_34FB), handle: 3, properties: 0x12,
                      descriptors: [.init(uuid: ESPHomeUUID(high: 0x0000_2902_0000_1000, low: 0x8000_0080_5F9B_34FB), handle: 4)]),
            ]),
        ])
        #expect(try BluetoothGATTGetServicesResponse(decoding: services.encoded()) == services)
        let free = BluetoothConnectionsFreeResponse(free: 6, limit: 8, allocated: [1, 0xFFFF_FFFF_FFFF])
        #expect(try BluetoothConnectionsFreeResponse(decoding: free.encoded()) == free)
        let error = BluetoothGATTErrorResponse(address: 9, handle: 12, error: 2)
        #expect(try BluetoothGATTErrorResponse(decoding: error.encoded()) == error)
        let write = BluetoothGATTWriteRequest(address: 9, handle: 12, response: true, data: [1, 2, 3])
        #expect(try BluetoothGATTWriteRequest(decoding: write.encoded()) == write)
        let request = BluetoothDeviceRequest(address: 5, requestType: .connectV3WithoutCache, addressType: 1)
        #expect(try BluetoothDeviceRequest(decoding: request.encoded()) == request)
        let notify = BluetoothGATTNotifyDataResponse(address: 5, handle: 7, data: [9])
        #expect(try BluetoothGATTNotifyDataResponse(decoding: notify.encoded()) == notify)
        let pairing = BluetoothDevicePairingResponse(address: 5, success: false, error: 5)
        #expect(try BluetoothDevicePairingResponse(decoding: pairing.encoded()) == pairing)
    }

    @Test func unknownFieldsAreSkipped() throws {
        var w = ProtoWriter()
        w.string(99, "from a newer client")
        w.fixed32(98, 7)
        w.uint(1, 0xAABB)
        w.uint(2, 0x2A)
        let read = try BluetoothGATTReadRequest(decoding: w.bytes)
        #expect(read == BluetoothGATTReadRequest(address: 0xAABB, handle: 0x2A))
    }

    @Test func shortUUIDsAreWidened() throws {
        var characteristic = ProtoWriter()
        characteristic.uint(2, 3)
        characteristic.uint(5, 0x2A19)
        var service = ProtoWriter()
        service.bytes(3, characteristic.bytes)
        var response = ProtoWriter()
        response.bytes(2, service.bytes)
        let decoded = try BluetoothGATTGetServicesResponse(decoding: response.bytes)
        #expect(decoded.services.first?.characteristics.first?.uuid == ESPHomeUUID(high: 0x0000_2A19_0000_1000, low: 0x8000_0080_5F9B_34FB))
    }

    @Test(arguments: [
        [0x08],                                   // a varint cut short
        [0x0A, 0x05, 0x01],                       // a length past the end
        [0x0B],                                   // wire type 3 (groups)
        [0x00, 0x01],                             // field number 0
        [0x08, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01], // an eleven-byte varint
        [0x0A, 0xFF, 0xFF, 0xFF, 0xFF, 0x0F],     // a 4 GiB length
    ] as [[UInt8]])
    func malformedBodiesThrow(_ bytes: [UInt8]) {
        #expect(throws: ESPHomeAPIError.self) { try BluetoothGATTWriteRequest(decoding: bytes) }
    }

    @Test func aLengthDelimitedFieldWhereAnIntegerBelongsThrows() {
        var w = ProtoWriter()
        w.bytes(1, [1, 2])
        #expect(throws: ESPHomeAPIError.self) { try BluetoothGATTReadRequest(decoding: w.bytes) }
    }

    @Test func plaintextFramesSplitAcrossPushes() throws {
        let a = ESPHomeAPIPlaintextFraming.encode(ESPHomeAPIFrame(HelloRequest(clientInfo: "test")))
        let b = ESPHomeAPIPlaintextFraming.encode(ESPHomeAPIFrame(PingRequest()))
        let stream = a + b
        var decoder = ESPHomeAPIPlaintextDecoder()
        var frames: [ESPHomeAPIFrame] = []
        for byte in stream { frames += try decoder.push([byte]) }
        #expect(frames.map(\.type) == [1, 7])
        #expect(try HelloRequest(decoding: frames[0].payload).clientInfo == "test")
    }

    @Test func plaintextDecoderRefusesBadInput() {
        var d1 = ESPHomeAPIPlaintextDecoder()
        #expect(throws: ESPHomeAPIError.self) { try d1.push([0x01, 0x00, 0x00]) }
        var d2 = ESPHomeAPIPlaintextDecoder(maximumPayload: 100)
        #expect(throws: ESPHomeAPIError.self) { try d2.push([0x00, 0xE8, 0x07, 0x01]) }   // 1000 bytes
        var d3 = ESPHomeAPIPlaintextDecoder()
        #expect(throws: ESPHomeAPIError.self) { try d3.push([0x00, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01]) }
    }

    @Test func noiseFramesAndInnerHeader() throws {
        var d = ESPHomeAPINoiseDecoder()
        #expect(try d.push([0x01, 0x00]) == [])
        #expect(try d.push([0x02, 0xAA, 0xBB, 0x01, 0x00, 0x00]) == [[0xAA, 0xBB], []])
        var plain = ESPHomeAPINoiseDecoder()
        #expect(throws: ESPHomeAPIError.self) { try plain.push([0x00, 0x05, 0x01]) }
        let inner = try ESPHomeAPINoiseFraming.inner(ESPHomeAPIFrame(type: 73, payload: [1, 2]))
        #expect(inner == [0, 73, 0, 2, 1, 2])
        #expect(try ESPHomeAPINoiseFraming.parseInner(inner) == ESPHomeAPIFrame(type: 73, payload: [1, 2]))
        #expect(throws: ESPHomeAPIError.self) { try ESPHomeAPINoiseFraming.parseInner([0, 73, 0, 9, 1]) }
        #expect(throws: ESPHomeAPIError.self) { try ESPHomeAPINoiseFraming.parseInner([0, 73]) }
    }
}

/// The Noise handshake against a vector made by an independent implementation (the Python `noiseprotocol` package,
/// the one aioesphomeapi uses) with fixed ephemeral keys, PSK 00 01 ... 1F and ESPHome's prologue.
@Suite struct NoiseHandshakeTests {
    let psk = Array(UInt8(0)..<32)
    let initiatorKey = [UInt8](repeating: 0x11, count: 32)
    let responderKey = [UInt8](repeating: 0x22, count: 32)
    let m1 = hex("7b4e909bbe7ffe44c465a220037d608ee35897d31ef972f07f74892cb0f73f13d1bc1a38b6793685dc7e2ffdf8ea0933")
    let m2 = hex("0faa684ed28867b97f4a6a2dee5df8ce974e76b7018e3f22a1c4cf2678570f207336b95933b321b1ae86673f689f5c9f")
    let c1 = hex("082c88d7e7ec7989cdcc4fb3e0f15ba76ed7af02758e2d")     // initiator → responder: 00 01 00 03 AA BB CC
    let c2 = hex("d9483bf41933f7b67e3e3122b3a337e0a547509f")           // responder → initiator: 00 02 00 00
    let hash = hex("9fbfe40f5a75a9ec6e8f7e6982afebb114835c543b8729c12c266990978dc80e")

    func key(_ bytes: [UInt8]) throws -> Curve25519.KeyAgreement.PrivateKey { try .init(rawRepresentation: bytes) }

    @Test func responderMatchesTheVector() throws {
        var responder = try NoiseNNpsk0Handshake(role: .responder, psk: psk, ephemeral: try key(responderKey))
        try responder.readMessage1(m1)
        var (message, send, receive) = try responder.writeMessage2()
        #expect(message == m2)
        #expect(responder.handshakeHash == hash)
        #expect(try receive.decrypt(c1) == [0, 1, 0, 3, 0xAA, 0xBB, 0xCC])
        #expect(try send.encrypt([0, 2, 0, 0]) == c2)
    }

    @Test func initiatorMatchesTheVector() throws {
        var initiator = try NoiseNNpsk0Handshake(role: .initiator, psk: psk, ephemeral: try key(initiatorKey))
        #expect(try initiator.writeMessage1() == m1)
        var (send, receive) = try initiator.readMessage2(m2)
        #expect(try send.encrypt([0, 1, 0, 3, 0xAA, 0xBB, 0xCC]) == c1)
        #expect(try receive.decrypt(c2) == [0, 2, 0, 0])
    }

    @Test func aWrongPSKFailsTheFirstMessage() throws {
        var wrong = psk
        wrong[0] ^= 1
        var responder = try NoiseNNpsk0Handshake(role: .responder, psk: wrong, ephemeral: try key(responderKey))
        #expect(throws: ESPHomeAPIError.self) { try responder.readMessage1(m1) }
    }

    @Test func badKeysAndMessagesAreRefused() throws {
        #expect(throws: ESPHomeAPIError.self) { try NoiseNNpsk0Handshake(role: .responder, psk: [1, 2, 3], ephemeral: .init()) }
        var responder = try NoiseNNpsk0Handshake(role: .responder, psk: psk, ephemeral: .init())
        #expect(throws: ESPHomeAPIError.self) { try responder.readMessage1(Array(m1.prefix(47))) }
        var tampered = m1
        tampered[40] ^= 0x80
        var other = try NoiseNNpsk0Handshake(role: .responder, psk: psk, ephemeral: .init())
        #expect(throws: ESPHomeAPIError.self) { try other.readMessage1(tampered) }
    }
}
