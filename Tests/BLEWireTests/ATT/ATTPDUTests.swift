import BLETestSupport
import BLEWire
import Testing

@Suite struct ATTPDUTests {
    let custom = BluetoothUUID("12345678-1234-5678-1234-56789ABCDEF0") ?? BluetoothUUID(0)

    /// Fixed-length PDUs: byte-exact both ways, and every strict prefix throws.
    @Test func fixedLengthVectors() {
        let vectors: [(ATTPDU, String)] = [
            // Error Response: request Read (0x0A), handle 0x0003, Insufficient Encryption
            (.errorResponse(.init(requestOpcode: .readRequest, handle: 3, error: .insufficientEncryption)), "01 0a 0300 0f"),
            // Exchange MTU Request/Response: 247 / 517
            (.exchangeMTURequest(.init(mtu: 247)), "02 f700"),
            (.exchangeMTUResponse(.init(mtu: 517)), "03 0502"),
            // Find Information Request: 0x0001–0xFFFF
            (.findInformationRequest(.init(range: .init(start: 1, end: 0xFFFF))), "04 0100 ffff"),
            // Read Request handle 0x0010
            (.readRequest(.init(handle: 0x10)), "0a 1000"),
            // Read Blob Request handle 0x001D, offset 0x0016
            (.readBlobRequest(.init(handle: 0x1D, offset: 0x16)), "0c 1d00 1600"),
            // Execute Write Request: commit
            (.executeWriteRequest(.init(commit: true)), "18 01"),
            (.executeWriteRequest(.init(commit: false)), "18 00"),
        ]
        for (value, hex) in vectors {
            expectVector(value, hex)
            expectDripFeed(ATTPDU.self, hex)
        }
    }

    /// Variable-length PDUs: byte-exact both ways; prefixes shorter than the minimum length throw.
    @Test func variableLengthVectors() throws {
        let vectors: [(ATTPDU, String)] = [
            // Find Information Response, format 1: (0x0009, 0x2902)
            (.findInformationResponse(.init(entries: [.init(handle: 9, type: 0x2902)])), "05 01 0900 0229"),
            // Find Information Response, format 2: (0x001B, custom 128-bit)
            (.findInformationResponse(.init(entries: [.init(handle: 0x1B, type: custom)])),
             "05 02 1b00 f0debc9a785634127856341278563412"),
            // Find By Type Value Request: 0x0001–0xFFFF, Primary Service (0x2800), value 0x180F
            (.findByTypeValueRequest(.init(range: .init(start: 1, end: 0xFFFF), type: 0x2800, value: [0x0F, 0x18])),
             "06 0100 ffff 0028 0f18"),
            // Find By Type Value Response: 0x000E–0x0011
            (.findByTypeValueResponse(.init(handles: [.init(start: 0x0E, end: 0x11)])), "07 0e00 1100"),
            // Read By Type Request: 0x0001–0xFFFF, Characteristic (0x2803)
            (.readByTypeRequest(.init(range: .init(start: 1, end: 0xFFFF), type: 0x2803)), "08 0100 ffff 0328"),
            // Read By Type Request with a 128-bit type
            (.readByTypeRequest(.init(range: .init(start: 1, end: 5), type: custom)),
             "08 0100 0500 f0debc9a785634127856341278563412"),
            // Read By Type Response: length 7: (0x0002: props 0x02, value handle 0x0003, UUID 0x2A00)
            (.readByTypeResponse(.init(entries: [.init(handle: 2, value: [0x02, 0x03, 0x00, 0x00, 0x2A])])),
             "09 07 0200 0203 00002a"),
            // Read Response "Bumble"
            (.readResponse(.init(value: Array("Bumble".utf8))), "0b 42756d626c65"),
            (.readBlobResponse(.init(value: [1, 2, 3])), "0d 010203"),
            // Read Multiple Request: handles 3 and 5
            (.readMultipleRequest(.init(handles: [3, 5])), "0e 0300 0500"),
            (.readMultipleResponse(.init(values: [0x57, 0x00, 0x3C])), "0f 57003c"),
            // Read By Group Type Request: Primary Service
            (.readByGroupTypeRequest(.init(range: .init(start: 1, end: 0xFFFF), type: 0x2800)), "10 0100 ffff 0028"),
            // Read By Group Type Response: length 6: (0x0001–0x0005, 0x1800), (0x0006–0x000D, 0x1801)
            (.readByGroupTypeResponse(.init(entries: [.init(handle: 1, endGroupHandle: 5, value: [0x00, 0x18]),
                                                      .init(handle: 6, endGroupHandle: 0x0D, value: [0x01, 0x18])])),
             "11 06 0100 0500 0018 0600 0d00 0118"),
            // Write Request handle 0x001B "hi"; Write Response; Write Command
            (.writeRequest(.init(handle: 0x1B, value: [0x68, 0x69])), "12 1b00 6869"),
            (.writeResponse(.init()), "13"),
            (.writeCommand(.init(handle: 0x1B, value: [0x01])), "52 1b00 01"),
            // Signed Write Command: handle 0x001B, value 0xAA, signature 12 bytes 00..0b
            (.signedWriteCommand(.init(handle: 0x1B, value: [0xAA], signature: Array(0..<12))), "d2 1b00 aa 000102030405060708090a0b"),
            // Prepare Write Request/Response: handle 0x001B, offset 0x0012, value 01 02
            (.prepareWriteRequest(.init(handle: 0x1B, offset: 0x12, value: [1, 2])), "16 1b00 1200 0102"),
            (.prepareWriteResponse(.init(handle: 0x1B, offset: 0x12, value: [1, 2])), "17 1b00 1200 0102"),
            (.executeWriteResponse(.init()), "19"),
            // Notification / Indication on handle 0x0014: heart rate 60 bpm
            (.handleValueNotification(.init(handle: 0x14, value: [0x00, 0x3C])), "1b 1400 003c"),
            (.handleValueIndication(.init(handle: 0x08, value: [0x01, 0x00, 0xFF, 0xFF])), "1d 0800 0100ffff"),
            (.handleValueConfirmation(.init()), "1e"),
            // Read Multiple Variable Request/Response: (len 1: 0x57), (len 3: "abc")
            (.readMultipleVariableRequest(.init(handles: [0x10, 0x1B])), "20 1000 1b00"),
            (.readMultipleVariableResponse(.init(entries: [.init([0x57]), .init(Array("abc".utf8))])), "21 0100 57 0300 616263"),
            // Multiple Handle Value Notification: (0x0014, 00 3c), (0x0010, 57)
            (.multipleHandleValueNotification(.init(entries: [.init(handle: 0x14, value: [0, 0x3C]), .init(handle: 0x10, value: [0x57])])),
             "23 1400 0200 003c 1000 0100 57"),
        ]
        for (value, hex) in vectors {
            expectVector(value, hex)
            // Every prefix shorter than the opcode's minimum length throws.
            let bytes = [UInt8](hex: hex) ?? []
            let minimum = ATTOpcode.minimumLength[value.opcode] ?? 1
            for length in 0..<min(minimum, bytes.count) {
                #expect(throws: WireError.self, "\(value.opcode) prefix \(length)") { try ATTPDU(bytes: Array(bytes.prefix(length))) }
            }
        }
    }

    @Test func malformedKnownPDUsThrow() {
        // Read By Type Response with entry length 0 and 1, and data not a multiple of the length.
        #expect(decodeErrorCode(ATTPDU.self, "09 00") == .truncated)
        #expect(decodeErrorCode(ATTPDU.self, "09 01 0200") == .invalidValue)
        #expect(decodeErrorCode(ATTPDU.self, "09 04 0200 01 0300") == .lengthMismatch)
        // Read By Group Type Response with length 3.
        #expect(decodeErrorCode(ATTPDU.self, "11 03 0100 0500") == .invalidValue)
        // Find Information Response with format 3, and a truncated entry.
        #expect(decodeErrorCode(ATTPDU.self, "05 03 0900 0229") == .invalidValue)
        #expect(decodeErrorCode(ATTPDU.self, "05 01 0900 0229 03") == .lengthMismatch)
        // Read Multiple Request with one handle.
        #expect(decodeErrorCode(ATTPDU.self, "0e 0300") == .truncated)
        #expect(decodeErrorCode(ATTPDU.self, "0e 0300 0500 07") == .lengthMismatch)
        // Execute Write flags 0x02.
        #expect(decodeErrorCode(ATTPDU.self, "18 02") == .invalidValue)
        // Trailing bytes on fixed PDUs.
        #expect(decodeErrorCode(ATTPDU.self, "0a 1000 00") == .trailingBytes)
        #expect(decodeErrorCode(ATTPDU.self, "13 00") == .trailingBytes)
        // Read By Type Request with a 3-byte type.
        #expect(decodeErrorCode(ATTPDU.self, "08 0100 ffff 032800") == .lengthMismatch)
        // Read Multiple Variable Response: a truncated value before the last.
        #expect(decodeErrorCode(ATTPDU.self, "21 0500 6162") == nil, "the last value may be truncated")
        // Empty PDU.
        #expect(decodeErrorCode(ATTPDU.self, "") == .truncated)
        // Multiple Handle Value Notification whose length runs past the end.
        #expect(decodeErrorCode(ATTPDU.self, "23 1400 0500 003c") == .truncated)
    }

    @Test func unknownOpcodes() throws {
        // An unknown request (0x3F) must be answered; an unknown command (0x7F, bit 6) is ignored.
        let request = try ATTPDU(bytes: [0x3F, 0x01])
        #expect(request == .unknown(opcode: ATTOpcode(rawValue: 0x3F), parameters: [1]))
        #expect(request.needsResponse)
        let command = try ATTPDU(bytes: [0x7F, 0x01, 0x02])
        #expect(command.opcode.isCommand && !command.needsResponse)
        #expect(command.encoded == [0x7F, 0x01, 0x02])
    }

    /// The opcode tables the decoder reads by `switch` agree, for all 256 opcodes, with the sets they stand for, and
    /// the minimum lengths are the table Zephyr keeps (each PDU's fixed fields, opcode included).
    @Test func opcodeTablesBySwitch() {
        for raw in UInt8.min...UInt8.max {
            let opcode = ATTOpcode(rawValue: raw)
            #expect(opcode.isRequest == ATTOpcode.requests.contains(opcode), "\(opcode)")
            #expect(opcode.isResponse == ATTOpcode.responses.contains(opcode), "\(opcode)")
        }
        #expect(ATTOpcode.requests.count == 12 && ATTOpcode.responses.count == 13)
        let expected: [ATTOpcode: Int] = [
            .errorResponse: 5, .exchangeMTURequest: 3, .exchangeMTUResponse: 3, .findInformationRequest: 5,
            .findInformationResponse: 6, .findByTypeValueRequest: 7, .findByTypeValueResponse: 5, .readByTypeRequest: 7,
            .readByTypeResponse: 4, .readRequest: 3, .readResponse: 1, .readBlobRequest: 5, .readBlobResponse: 1,
            .readMultipleRequest: 5, .readMultipleResponse: 1, .readByGroupTypeRequest: 7, .readByGroupTypeResponse: 6,
            .writeRequest: 3, .writeResponse: 1, .prepareWriteRequest: 5, .prepareWriteResponse: 5,
            .executeWriteRequest: 2, .executeWriteResponse: 1, .handleValueNotification: 3, .handleValueIndication: 3,
            .handleValueConfirmation: 1, .readMultipleVariableRequest: 5, .readMultipleVariableResponse: 1,
            .multipleHandleValueNotification: 5, .writeCommand: 3, .signedWriteCommand: 15,
        ]
        #expect(ATTOpcode.minimumLength == expected)
        // An opcode outside the table decodes as unknown at any length.
        #expect((try? ATTPDU(bytes: [0x7E])) == .unknown(opcode: ATTOpcode(rawValue: 0x7E), parameters: []))
    }

    @Test func opcodeMetadata() {
        #expect(ATTOpcode.readBlobRequest.responseOpcode == .readBlobResponse)
        #expect(ATTOpcode.writeCommand.isCommand && !ATTOpcode.writeCommand.isRequest)
        #expect(ATTOpcode.signedWriteCommand.hasAuthenticationSignature)
        #expect(ATTOpcode.readByGroupTypeResponse.isResponse && ATTOpcode.errorResponse.isResponse)
        #expect(!ATTOpcode.handleValueNotification.isResponse)
        #expect(ATTPDU.readRequest(.init(handle: 1)).needsResponse)
        #expect(!ATTPDU.handleValueConfirmation(.init()).needsResponse)
        #expect(ATTPDU.handleValueIndication(.init(handle: 1, value: [])).isNotificationOrIndication)
        #expect(ATT.maximumWriteValueLength(mtu: 247) == 244 && ATT.maximumReadValueLength(mtu: 23) == 22)
        #expect(ATT.maximumPrepareWriteValueLength(mtu: 23) == 18)
        #expect(ATTErrorCode.insufficientEncryption.description == "Insufficient Encryption (0x0f)")
        #expect(ATTErrorCode(rawValue: 0x80).isApplicationError)
        #expect(ATTHandleRange(start: 0, end: 5).isValid == false && ATTHandleRange(start: 6, end: 5).isValid == false)
    }
}
