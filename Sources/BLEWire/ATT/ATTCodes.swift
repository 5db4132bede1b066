/// An ATT opcode: method (bits 0–5), command flag (bit 6), authentication signature flag (bit 7).
/// Core 5.4, Vol 3, Part F, 3.3.1. Open code.
public struct ATTOpcode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// Error response (0x01).
    public static let errorResponse = ATTOpcode(rawValue: 0x01)
    /// Exchange MTU request (0x02).
    public static let exchangeMTURequest = ATTOpcode(rawValue: 0x02)
    /// Exchange MTU response (0x03).
    public static let exchangeMTUResponse = ATTOpcode(rawValue: 0x03)
    /// Find information request (0x04).
    public static let findInformationRequest = ATTOpcode(rawValue: 0x04)
    /// Find information response (0x05).
    public static let findInformationResponse = ATTOpcode(rawValue: 0x05)
    /// Find by type value request (0x06).
    public static let findByTypeValueRequest = ATTOpcode(rawValue: 0x06)
    /// Find by type value response (0x07).
    public static let findByTypeValueResponse = ATTOpcode(rawValue: 0x07)
    /// Read by type request (0x08).
    public static let readByTypeRequest = ATTOpcode(rawValue: 0x08)
    /// Read by type response (0x09).
    public static let readByTypeResponse = ATTOpcode(rawValue: 0x09)
    /// Read request (0x0A).
    public static let readRequest = ATTOpcode(rawValue: 0x0A)
    /// Read response (0x0B).
    public static let readResponse = ATTOpcode(rawValue: 0x0B)
    /// Read blob request (0x0C).
    public static let readBlobRequest = ATTOpcode(rawValue: 0x0C)
    /// Read blob response (0x0D).
    public static let readBlobResponse = ATTOpcode(rawValue: 0x0D)
    /// Read multiple request (0x0E).
    public static let readMultipleRequest = ATTOpcode(rawValue: 0x0E)
    /// Read multiple response (0x0F).
    public static let readMultipleResponse = ATTOpcode(rawValue: 0x0F)
    /// Read by group type request (0x10).
    public static let readByGroupTypeRequest = ATTOpcode(rawValue: 0x10)
    /// Read by group type response (0x11).
    public static let readByGroupTypeResponse = ATTOpcode(rawValue: 0x11)
    /// Write request (0x12).
    public static let writeRequest = ATTOpcode(rawValue: 0x12)
    /// Write response (0x13).
    public static let writeResponse = ATTOpcode(rawValue: 0x13)
    /// Prepare write request (0x16).
    public static let prepareWriteRequest = ATTOpcode(rawValue: 0x16)
    /// Prepare write response (0x17).
    public static let prepareWriteResponse = ATTOpcode(rawValue: 0x17)
    /// Execute write request (0x18).
    public static let executeWriteRequest = ATTOpcode(rawValue: 0x18)
    /// Execute write response (0x19).
    public static let executeWriteResponse = ATTOpcode(rawValue: 0x19)
    /// Handle value notification (0x1B).
    public static let handleValueNotification = ATTOpcode(rawValue: 0x1B)
    /// Handle value indication (0x1D).
    public static let handleValueIndication = ATTOpcode(rawValue: 0x1D)
    /// Handle value confirmation (0x1E).
    public static let handleValueConfirmation = ATTOpcode(rawValue: 0x1E)
    /// Read multiple variable request (0x20).
    public static let readMultipleVariableRequest = ATTOpcode(rawValue: 0x20)
    /// Read multiple variable response (0x21).
    public static let readMultipleVariableResponse = ATTOpcode(rawValue: 0x21)
    /// Multiple handle value notification (0x23).
    public static let multipleHandleValueNotification = ATTOpcode(rawValue: 0x23)
    /// Write command (0x52).
    public static let writeCommand = ATTOpcode(rawValue: 0x52)
    /// Signed write command (0xD2).
    public static let signedWriteCommand = ATTOpcode(rawValue: 0xD2)

    /// The method bits.
    public var method: UInt8 { rawValue & 0x3F }
    /// Whether the PDU is a command (bit 6): never answered, an unknown one is ignored.
    public var isCommand: Bool { rawValue & 0x40 != 0 }
    /// Whether a 12-byte authentication signature follows the parameters (bit 7).
    public var hasAuthenticationSignature: Bool { rawValue & 0x80 != 0 }

    /// Requests: PDUs a client sends that the server must answer with a response or an Error Response.
    public static let requests: Set<ATTOpcode> = [
        .exchangeMTURequest, .findInformationRequest, .findByTypeValueRequest, .readByTypeRequest, .readRequest,
        .readBlobRequest, .readMultipleRequest, .readByGroupTypeRequest, .writeRequest, .prepareWriteRequest,
        .executeWriteRequest, .readMultipleVariableRequest,
    ]

    /// Whether this is a known request, or an unknown PDU that is not a command (an unknown request).
    /// (A `switch` over the values of ``requests``: a `Set` look-up hashes the opcode, and the data path asks for every
    /// PDU.)
    public var isRequest: Bool {
        switch rawValue {
        case 0x02, 0x04, 0x06, 0x08, 0x0A, 0x0C, 0x0E, 0x10, 0x12, 0x16, 0x18, 0x20: true
        default: false
        }
    }

    /// The response opcode for a request.
    public var responseOpcode: ATTOpcode? { isRequest ? ATTOpcode(rawValue: rawValue + 1) : nil }

    /// Whether the PDU answers a request (a response or an Error Response): one of ``responses``, by a `switch`.
    public var isResponse: Bool {
        switch rawValue {
        case 0x01, 0x03, 0x05, 0x07, 0x09, 0x0B, 0x0D, 0x0F, 0x11, 0x13, 0x17, 0x19, 0x21: true
        default: false
        }
    }

    /// Responses: the Error Response and each request's response.
    public static let responses: Set<ATTOpcode> = Set(requests.compactMap(\.responseOpcode) + [.errorResponse])

    /// The smallest valid PDU length (opcode included) for each known opcode: data, as Zephyr keeps it.
    public static let minimumLength: [ATTOpcode: Int] = Dictionary(uniqueKeysWithValues: (UInt8.min...UInt8.max).compactMap { raw in
        ATTOpcode(rawValue: raw).minimumPDULength.map { (ATTOpcode(rawValue: raw), $0) }
    })

    /// This opcode's entry of ``minimumLength`` (`nil` for an unknown opcode), by a `switch`: the decoder asks for
    /// every PDU, and a `Dictionary` look-up hashes the opcode.
    var minimumPDULength: Int? {
        switch rawValue {
        case 0x01: 5   // Error Response
        case 0x02, 0x03: 3   // Exchange MTU Request, Response
        case 0x04: 5   // Find Information Request
        case 0x05: 6   // Find Information Response
        case 0x06: 7   // Find By Type Value Request
        case 0x07: 5   // Find By Type Value Response
        case 0x08: 7   // Read By Type Request
        case 0x09: 4   // Read By Type Response
        case 0x0A: 3   // Read Request
        case 0x0B: 1   // Read Response
        case 0x0C: 5   // Read Blob Request
        case 0x0D: 1   // Read Blob Response
        case 0x0E: 5   // Read Multiple Request
        case 0x0F: 1   // Read Multiple Response
        case 0x10: 7   // Read By Group Type Request
        case 0x11: 6   // Read By Group Type Response
        case 0x12: 3   // Write Request
        case 0x13: 1   // Write Response
        case 0x16, 0x17: 5   // Prepare Write Request, Response
        case 0x18: 2   // Execute Write Request
        case 0x19: 1   // Execute Write Response
        case 0x1B, 0x1D: 3   // Handle Value Notification, Indication
        case 0x1E: 1   // Handle Value Confirmation
        case 0x20: 5   // Read Multiple Variable Request
        case 0x21: 1   // Read Multiple Variable Response
        case 0x23: 5   // Multiple Handle Value Notification
        case 0x52: 3   // Write Command
        case 0xD2: 15   // Signed Write Command
        default: nil
        }
    }

    public var description: String { "ATT 0x" + [rawValue].hexString() }
}

/// An ATT error code. Core 5.4, Vol 3, Part F, 3.4.1.1 and Core Specification Supplement, Part B. Open code.
public struct ATTErrorCode: RawRepresentable, Hashable, Sendable, Error, CustomStringConvertible {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// Invalid handle (0x01).
    public static let invalidHandle = ATTErrorCode(rawValue: 0x01)
    /// Read not permitted (0x02).
    public static let readNotPermitted = ATTErrorCode(rawValue: 0x02)
    /// Write not permitted (0x03).
    public static let writeNotPermitted = ATTErrorCode(rawValue: 0x03)
    /// Invalid PDU (0x04).
    public static let invalidPDU = ATTErrorCode(rawValue: 0x04)
    /// Insufficient authentication (0x05).
    public static let insufficientAuthentication = ATTErrorCode(rawValue: 0x05)
    /// Request not supported (0x06).
    public static let requestNotSupported = ATTErrorCode(rawValue: 0x06)
    /// Invalid offset (0x07).
    public static let invalidOffset = ATTErrorCode(rawValue: 0x07)
    /// Insufficient authorization (0x08).
    public static let insufficientAuthorization = ATTErrorCode(rawValue: 0x08)
    /// Prepare queue full (0x09).
    public static let prepareQueueFull = ATTErrorCode(rawValue: 0x09)
    /// Attribute not found (0x0A).
    public static let attributeNotFound = ATTErrorCode(rawValue: 0x0A)
    /// Attribute not long (0x0B).
    public static let attributeNotLong = ATTErrorCode(rawValue: 0x0B)
    /// Encryption key size too short (0x0C).
    public static let encryptionKeySizeTooShort = ATTErrorCode(rawValue: 0x0C)
    /// Invalid attribute value length (0x0D).
    public static let invalidAttributeValueLength = ATTErrorCode(rawValue: 0x0D)
    /// Unlikely error (0x0E).
    public static let unlikelyError = ATTErrorCode(rawValue: 0x0E)
    /// Insufficient encryption (0x0F).
    public static let insufficientEncryption = ATTErrorCode(rawValue: 0x0F)
    /// Unsupported group type (0x10).
    public static let unsupportedGroupType = ATTErrorCode(rawValue: 0x10)
    /// Insufficient resources (0x11).
    public static let insufficientResources = ATTErrorCode(rawValue: 0x11)
    /// Database out of sync (0x12).
    public static let databaseOutOfSync = ATTErrorCode(rawValue: 0x12)
    /// Value not allowed (0x13).
    public static let valueNotAllowed = ATTErrorCode(rawValue: 0x13)
    /// Common profile and service error codes (CSS Part B, 1.2).
    public static let writeRequestRejected = ATTErrorCode(rawValue: 0xFC)
    /// CCCD improperly configured (0xFD).
    public static let cccdImproperlyConfigured = ATTErrorCode(rawValue: 0xFD)
    /// Procedure already in progress (0xFE).
    public static let procedureAlreadyInProgress = ATTErrorCode(rawValue: 0xFE)
    /// Out of range (0xFF).
    public static let outOfRange = ATTErrorCode(rawValue: 0xFF)

    /// Whether the code is in the application error range 0x80–0x9F.
    public var isApplicationError: Bool { (0x80...0x9F).contains(rawValue) }

    public var description: String {
        let name: String = switch self {
        case .invalidHandle: "Invalid Handle"
        case .readNotPermitted: "Read Not Permitted"
        case .writeNotPermitted: "Write Not Permitted"
        case .invalidPDU: "Invalid PDU"
        case .insufficientAuthentication: "Insufficient Authentication"
        case .requestNotSupported: "Request Not Supported"
        case .invalidOffset: "Invalid Offset"
        case .insufficientAuthorization: "Insufficient Authorization"
        case .prepareQueueFull: "Prepare Queue Full"
        case .attributeNotFound: "Attribute Not Found"
        case .attributeNotLong: "Attribute Not Long"
        case .encryptionKeySizeTooShort: "Encryption Key Size Too Short"
        case .invalidAttributeValueLength: "Invalid Attribute Value Length"
        case .unlikelyError: "Unlikely Error"
        case .insufficientEncryption: "Insufficient Encryption"
        case .unsupportedGroupType: "Unsupported Group Type"
        case .insufficientResources: "Insufficient Resources"
        case .databaseOutOfSync: "Database Out Of Sync"
        case .valueNotAllowed: "Value Not Allowed"
        case .writeRequestRejected: "Write Request Rejected"
        case .cccdImproperlyConfigured: "Client Characteristic Configuration Descriptor Improperly Configured"
        case .procedureAlreadyInProgress: "Procedure Already in Progress"
        case .outOfRange: "Out of Range"
        default: isApplicationError ? "Application Error" : "ATT error"
        }
        return "\(name) (0x\([rawValue].hexString()))"
    }
}

/// ATT sizes. Core 5.4, Vol 3, Part F, 3.2.8 and 3.4.
public enum ATT {
    /// ATT_MTU on LE before any exchange.
    public static let defaultLEMTU = 23
    /// The largest ATT_MTU (512-byte values + headers fit in 517).
    public static let maximumMTU = 517
    /// The longest attribute value. Core 5.4, Vol 3, Part F, 3.2.9.
    public static let maximumAttributeValueLength = 512
    /// Value bytes a notification or indication carries at `mtu`.
    public static func maximumNotificationValueLength(mtu: Int) -> Int { mtu - 3 }
    /// Value bytes a Write Request or Write Command carries at `mtu`.
    public static func maximumWriteValueLength(mtu: Int) -> Int { mtu - 3 }
    /// Value bytes a Read or Read Blob Response carries at `mtu`.
    public static func maximumReadValueLength(mtu: Int) -> Int { mtu - 1 }
    /// Value bytes a Prepare Write Request carries at `mtu`.
    public static func maximumPrepareWriteValueLength(mtu: Int) -> Int { mtu - 5 }
}
