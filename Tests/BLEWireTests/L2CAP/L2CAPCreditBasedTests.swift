import BLETestSupport
import BLEWire
import Testing

@Suite struct L2CAPCreditBasedTests {
    @Test func enhancedSignalingVectors() throws {
        let vectors: [(L2CAPSignalingPDU, String)] = [
            // L2CAP_CREDIT_BASED_CONNECTION_REQ, id 8: SPSM 0x0027 (EATT), MTU 64, MPS 64, 5 credits, SCIDs 0x0040 0x0041
            (.creditBasedConnectionRequest(identifier: 8, .init(spsm: .eatt, mtu: 64, mps: 64, initialCredits: 5,
                                                                 sourceCIDs: [0x40, 0x41])),
             "17 08 0c00 2700 4000 4000 0500 4000 4100"),
            // Same with the maximum of five SCIDs 0x0040...0x0044
            (.creditBasedConnectionRequest(identifier: 8, .init(spsm: L2CAPSPSM(rawValue: 0x80), mtu: 512, mps: 247,
                                                                 initialCredits: 10, sourceCIDs: [0x40, 0x41, 0x42, 0x43, 0x44])),
             "17 08 1200 8000 0002 f700 0a00 4000 4100 4200 4300 4400"),
            // L2CAP_CREDIT_BASED_CONNECTION_RSP, id 8: MTU 100, MPS 64, 3 credits, result 0x0004 (some refused, no
            // resources), DCIDs 0x0050 and 0x0000 (refused)
            (.creditBasedConnectionResponse(identifier: 8, .init(mtu: 100, mps: 64, initialCredits: 3,
                                                                  result: .noResourcesAvailable, destinationCIDs: [0x50, 0])),
             "18 08 0c00 6400 4000 0300 0400 5000 0000"),
            // L2CAP_CREDIT_BASED_RECONFIGURE_REQ, id 9: MTU 128, MPS 64, DCID 0x0040
            (.creditBasedReconfigureRequest(identifier: 9, .init(mtu: 128, mps: 64, destinationCIDs: [0x40])),
             "19 09 0600 8000 4000 4000"),
            // L2CAP_CREDIT_BASED_RECONFIGURE_RSP, id 9: result 0x0001 (reduction of MTU not allowed)
            (.creditBasedReconfigureResponse(identifier: 9, result: .mtuReductionNotAllowed), "1a 09 0200 0100"),
            // LE credit based connection response refusing with 0x000A (Source CID already allocated)
            (.leCreditBasedConnectionResponse(identifier: 2, .init(destinationCID: 0, mtu: 0, mps: 0, initialCredits: 0,
                                                                   result: .sourceCIDAlreadyAllocated)),
             "15 02 0a00 0000 0000 0000 0000 0a00"),
        ]
        for (value, hex) in vectors {
            let bytes = [UInt8](hex: hex) ?? []
            #expect(value.encoded == bytes, "encode \(hex)")
            #expect(try L2CAPSignalingPDU(bytes: bytes) == value, "decode \(hex)")
            for length in 0..<bytes.count {
                #expect(throws: WireError.self, "prefix \(length) of \(hex)") {
                    try L2CAPSignalingPDU(bytes: Array(bytes.prefix(length)))
                }
            }
        }
    }

    @Test func structVectors() {
        // SPSM 0x0080, MTU 512, MPS 247, 10 credits, SCID 0x0040
        expectVector(L2CAPCreditBasedConnectionRequest(spsm: L2CAPSPSM(rawValue: 0x80), mtu: 512, mps: 247,
                                                       initialCredits: 10, sourceCIDs: [0x40]),
                     "8000 0002 f700 0a00 4000")
        // MTU 64, MPS 64, 0 credits, result 0x000C, no DCIDs
        expectVector(L2CAPCreditBasedConnectionResponse(mtu: 64, mps: 64, initialCredits: 0, result: .invalidParameters,
                                                        destinationCIDs: []),
                     "4000 4000 0000 0c00")
        // MTU 64, MPS 64, DCIDs 0x0041 0x0042
        expectVector(L2CAPCreditBasedReconfigureRequest(mtu: 64, mps: 64, destinationCIDs: [0x41, 0x42]),
                     "4000 4000 4100 4200")
        // Shorter than the fixed fields: every prefix throws.
        expectDripFeed(L2CAPCreditBasedConnectionRequest.self, "8000 0002 f700 0a00")
        expectDripFeed(L2CAPCreditBasedConnectionResponse.self, "4000 4000 0000 0c00")
        expectDripFeed(L2CAPCreditBasedReconfigureRequest.self, "4000 4000")
    }

    @Test func malformedCIDLists() throws {
        // Half a Source CID.
        #expect(decodeErrorCode(L2CAPCreditBasedConnectionRequest.self, "8000 0002 f700 0a00 40") == .lengthMismatch)
        #expect(decodeErrorCode(L2CAPCreditBasedConnectionResponse.self, "4000 4000 0000 0000 4100 42") == .lengthMismatch)
        #expect(decodeErrorCode(L2CAPCreditBasedReconfigureRequest.self, "4000 4000 41") == .lengthMismatch)
        // An empty or over-long list decodes (the receiver refuses it with a response, not a Command Reject).
        let six = L2CAPCreditBasedConnectionRequest(spsm: .eatt, mtu: 64, mps: 64, initialCredits: 1,
                                                    sourceCIDs: Array(0x40...0x45))
        #expect(try L2CAPCreditBasedConnectionRequest(bytes: six.encoded).sourceCIDs.count == 6)
        // Reconfigure response with trailing data.
        #expect(throws: WireError.self) { try L2CAPSignalingPDU(bytes: [0x1A, 0x01, 0x03, 0x00, 0x00, 0x00, 0x00]) }
    }

    @Test func spsmRanges() {
        #expect(L2CAPSPSM(rawValue: 0x0001).isFixed && L2CAPSPSM(rawValue: 0x007F).isFixed)
        #expect(L2CAPSPSM(rawValue: 0x0080).isDynamic && L2CAPSPSM(rawValue: 0x00FF).isDynamic)
        #expect(!L2CAPSPSM(rawValue: 0x0000).isValid && !L2CAPSPSM(rawValue: 0x0100).isValid)
        #expect(!L2CAPSPSM(rawValue: 0x0080).isFixed && !L2CAPSPSM(rawValue: 0x007F).isDynamic)
        #expect(L2CAPSPSM.eatt.rawValue == 0x0027 && L2CAPSPSM.eatt.isFixed)
        #expect(L2CAPSPSM(rawValue: 0x0080).description == "SPSM 0x0080")
    }

    @Test func resultCodes() {
        let codes: [(L2CAPCreditBasedConnectionResult, UInt16)] = [
            (.success, 0x0000), (.spsmNotSupported, 0x0002), (.noResourcesAvailable, 0x0004),
            (.insufficientAuthentication, 0x0005), (.insufficientAuthorization, 0x0006),
            (.encryptionKeySizeTooShort, 0x0007), (.insufficientEncryption, 0x0008), (.invalidSourceCID, 0x0009),
            (.sourceCIDAlreadyAllocated, 0x000A), (.unacceptableParameters, 0x000B), (.invalidParameters, 0x000C),
            (.pendingNoFurtherInformation, 0x000D), (.pendingAuthentication, 0x000E), (.pendingAuthorization, 0x000F),
        ]
        for (code, raw) in codes { #expect(code.rawValue == raw) }
        #expect(L2CAPCreditBasedConnectionResult.pendingAuthentication.isPending && !L2CAPCreditBasedConnectionResult.success.isPending)
        #expect(L2CAPCreditBasedConnectionResult(rawValue: 0x0001).description == "reserved (0x0001)")
        #expect(L2CAPCreditBasedConnectionResult.invalidSourceCID.description == "invalid Source CID (0x0009)")
        let reconfigure: [(L2CAPCreditBasedReconfigureResult, UInt16)] = [
            (.success, 0), (.mtuReductionNotAllowed, 1), (.mpsReductionNotAllowed, 2), (.invalidDestinationCID, 3),
            (.unacceptableParameters, 4),
        ]
        for (code, raw) in reconfigure { #expect(code.rawValue == raw) }
        #expect(L2CAPConnectionParameterUpdateResult.rejected.rawValue == 1)
    }
}
