/// An LE signaling command code. Core 5.4, Vol 3, Part A, 4. Open code.
public struct L2CAPSignalingCode: RawRepresentable, Hashable, Sendable {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// Command reject (0x01).
    public static let commandReject = L2CAPSignalingCode(rawValue: 0x01)
    /// Disconnection request (0x06).
    public static let disconnectionRequest = L2CAPSignalingCode(rawValue: 0x06)
    /// Disconnection response (0x07).
    public static let disconnectionResponse = L2CAPSignalingCode(rawValue: 0x07)
    /// Connection parameter update request (0x12).
    public static let connectionParameterUpdateRequest = L2CAPSignalingCode(rawValue: 0x12)
    /// Connection parameter update response (0x13).
    public static let connectionParameterUpdateResponse = L2CAPSignalingCode(rawValue: 0x13)
    /// LE credit based connection request (0x14).
    public static let leCreditBasedConnectionRequest = L2CAPSignalingCode(rawValue: 0x14)
    /// LE credit based connection response (0x15).
    public static let leCreditBasedConnectionResponse = L2CAPSignalingCode(rawValue: 0x15)
    /// Flow control credit (0x16).
    public static let flowControlCredit = L2CAPSignalingCode(rawValue: 0x16)
    /// Credit based connection request, enhanced mode (0x17).
    public static let creditBasedConnectionRequest = L2CAPSignalingCode(rawValue: 0x17)
    /// Credit based connection response, enhanced mode (0x18).
    public static let creditBasedConnectionResponse = L2CAPSignalingCode(rawValue: 0x18)
    /// Credit based reconfigure request (0x19).
    public static let creditBasedReconfigureRequest = L2CAPSignalingCode(rawValue: 0x19)
    /// Credit based reconfigure response (0x1A).
    public static let creditBasedReconfigureResponse = L2CAPSignalingCode(rawValue: 0x1A)
}

/// The result of a Connection Parameter Update Response. Core 5.4, Vol 3, Part A, 4.21. Open code.
public struct L2CAPConnectionParameterUpdateResult: RawRepresentable, Hashable, Sendable {
    public var rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }
    /// Connection parameters accepted (0x0000).
    public static let accepted = L2CAPConnectionParameterUpdateResult(rawValue: 0x0000)
    /// Connection parameters rejected (0x0001).
    public static let rejected = L2CAPConnectionParameterUpdateResult(rawValue: 0x0001)
}

/// A signaling command's header and raw data. Core 5.4, Vol 3, Part A, 4.
public struct L2CAPSignalingCommand: Hashable, Sendable, WireCodable {
    /// `signaling code`.
    public var code: L2CAPSignalingCode
    /// Matches a response to its request (0 is invalid).
    public var identifier: UInt8
    /// Data.
    public var data: [UInt8]

    /// Creates a signaling command with its code, the identifier that pairs a request with its response, and its raw
    /// data.
    public init(code: L2CAPSignalingCode, identifier: UInt8, data: [UInt8]) {
        self.code = code
        self.identifier = identifier
        self.data = data
    }

    public init(from r: inout ByteReader) throws(WireError) {
        code = L2CAPSignalingCode(rawValue: try r.readUInt8("signaling code"))
        identifier = try r.readUInt8("signaling identifier")
        let length = Int(try r.readUInt16("signaling length"))
        guard r.remainingCount == length else {
            throw WireError(.lengthMismatch, "signaling command length \(length) but \(r.remainingCount) byte(s)")
        }
        data = r.readRemaining()
    }

    public func encode(into w: inout ByteWriter) {
        w.write(code.rawValue)
        w.write(identifier)
        w.write(UInt16(truncatingIfNeeded: data.count))
        w.write(data)
    }
}

/// Command Reject reasons. Core 5.4, Vol 3, Part A, 4.1.
public enum L2CAPCommandRejectReason: Hashable, Sendable {
    /// 0x0000: Command not understood.
    case commandNotUnderstood
    /// 0x0001: Signaling MTU exceeded, with the actual MTU.
    case signalingMTUExceeded(actualMTU: UInt16)
    /// 0x0002: Invalid CID in request, with the local and remote CIDs.
    case invalidCID(local: UInt16, remote: UInt16)
}

/// Connection Parameter Update Request. Core 5.4, Vol 3, Part A, 4.20.
public struct L2CAPConnectionParameterUpdateRequest: Hashable, Sendable, WireCodable {
    /// `Interval Min`.
    public var intervalMin: UInt16
    /// `Interval Max`.
    public var intervalMax: UInt16
    /// `Latency`.
    public var latency: UInt16
    /// `Timeout`.
    public var timeout: UInt16
    /// Creates a Connection Parameter Update Request for interval bounds (units of 1.25 ms), peripheral latency and a
    /// supervision timeout (units of 10 ms).
    public init(intervalMin: UInt16, intervalMax: UInt16, latency: UInt16, timeout: UInt16) {
        self.intervalMin = intervalMin
        self.intervalMax = intervalMax
        self.latency = latency
        self.timeout = timeout
    }
    public init(from r: inout ByteReader) throws(WireError) {
        intervalMin = try r.readUInt16("Interval Min")
        intervalMax = try r.readUInt16("Interval Max")
        latency = try r.readUInt16("Latency")
        timeout = try r.readUInt16("Timeout")
        try r.expectEnd("Connection Parameter Update Request")
    }
    public func encode(into w: inout ByteWriter) {
        w.write(intervalMin)
        w.write(intervalMax)
        w.write(latency)
        w.write(timeout)
    }
    /// Whether the values are within the ranges the specification allows.
    public var isValid: Bool {
        HCILEConnectionParameters.areValid(intervalMin: intervalMin, intervalMax: intervalMax, latency: latency,
                                           supervisionTimeout: timeout)
    }
}

/// LE Credit Based Connection Request. Core 5.4, Vol 3, Part A, 4.22.
public struct L2CAPLECreditBasedConnectionRequest: Hashable, Sendable, WireCodable {
    /// `SPSM`.
    public var spsm: L2CAPSPSM
    /// `Source CID`.
    public var sourceCID: UInt16
    /// `MTU`.
    public var mtu: UInt16
    /// `MPS`.
    public var mps: UInt16
    /// `Initial Credits`.
    public var initialCredits: UInt16
    /// Creates an LE Credit Based Connection Request for the service `spsm`, from the channel `sourceCID`, with this
    /// side's MTU, MPS and initial credits.
    public init(spsm: L2CAPSPSM, sourceCID: UInt16, mtu: UInt16, mps: UInt16, initialCredits: UInt16) {
        self.spsm = spsm
        self.sourceCID = sourceCID
        self.mtu = mtu
        self.mps = mps
        self.initialCredits = initialCredits
    }
    public init(from r: inout ByteReader) throws(WireError) {
        spsm = L2CAPSPSM(rawValue: try r.readUInt16("SPSM"))
        sourceCID = try r.readUInt16("Source CID")
        mtu = try r.readUInt16("MTU")
        mps = try r.readUInt16("MPS")
        initialCredits = try r.readUInt16("Initial Credits")
        try r.expectEnd("LE Credit Based Connection Request")
    }
    public func encode(into w: inout ByteWriter) {
        for v in [spsm.rawValue, sourceCID, mtu, mps, initialCredits] { w.write(v) }
    }
}

/// LE Credit Based Connection Response. Core 5.4, Vol 3, Part A, 4.23.
public struct L2CAPLECreditBasedConnectionResponse: Hashable, Sendable, WireCodable {
    /// `Destination CID`.
    public var destinationCID: UInt16
    /// `MTU`.
    public var mtu: UInt16
    /// `MPS`.
    public var mps: UInt16
    /// `Initial Credits`.
    public var initialCredits: UInt16
    /// `Result`.
    public var result: L2CAPCreditBasedConnectionResult
    /// Creates an LE Credit Based Connection Response with the answering side's channel, MTU, MPS, initial credits and
    /// the result.
    public init(destinationCID: UInt16, mtu: UInt16, mps: UInt16, initialCredits: UInt16,
                result: L2CAPCreditBasedConnectionResult) {
        self.destinationCID = destinationCID
        self.mtu = mtu
        self.mps = mps
        self.initialCredits = initialCredits
        self.result = result
    }
    public init(from r: inout ByteReader) throws(WireError) {
        destinationCID = try r.readUInt16("Destination CID")
        mtu = try r.readUInt16("MTU")
        mps = try r.readUInt16("MPS")
        initialCredits = try r.readUInt16("Initial Credits")
        result = L2CAPCreditBasedConnectionResult(rawValue: try r.readUInt16("Result"))
        try r.expectEnd("LE Credit Based Connection Response")
    }
    public func encode(into w: inout ByteWriter) {
        for v in [destinationCID, mtu, mps, initialCredits, result.rawValue] { w.write(v) }
    }
}

/// A decoded LE signaling command. Core 5.4, Vol 3, Part A, 4.
///
/// One command per C-frame on the LE signaling channel. An unknown code decodes to ``unknown(_:)`` (answer
/// Command Reject 0x0000 with its identifier); a known code with malformed data throws, and ``identifier(of:)``
/// recovers the identifier for the reject when the header could be read.
public enum L2CAPSignalingPDU: Hashable, Sendable {
    /// Command reject.
    case commandReject(identifier: UInt8, reason: L2CAPCommandRejectReason)
    /// Disconnection request.
    case disconnectionRequest(identifier: UInt8, destinationCID: UInt16, sourceCID: UInt16)
    /// Disconnection response.
    case disconnectionResponse(identifier: UInt8, destinationCID: UInt16, sourceCID: UInt16)
    /// Connection parameter update request.
    case connectionParameterUpdateRequest(identifier: UInt8, L2CAPConnectionParameterUpdateRequest)
    /// Connection parameter update response.
    case connectionParameterUpdateResponse(identifier: UInt8, result: L2CAPConnectionParameterUpdateResult)
    /// LE credit based connection request.
    case leCreditBasedConnectionRequest(identifier: UInt8, L2CAPLECreditBasedConnectionRequest)
    /// LE credit based connection response.
    case leCreditBasedConnectionResponse(identifier: UInt8, L2CAPLECreditBasedConnectionResponse)
    /// Flow control credit.
    case flowControlCredit(identifier: UInt8, cid: UInt16, credits: UInt16)
    /// Credit based connection request (enhanced mode, up to 5 channels).
    case creditBasedConnectionRequest(identifier: UInt8, L2CAPCreditBasedConnectionRequest)
    /// Credit based connection response (enhanced mode).
    case creditBasedConnectionResponse(identifier: UInt8, L2CAPCreditBasedConnectionResponse)
    /// Credit based reconfigure request.
    case creditBasedReconfigureRequest(identifier: UInt8, L2CAPCreditBasedReconfigureRequest)
    /// Credit based reconfigure response.
    case creditBasedReconfigureResponse(identifier: UInt8, result: L2CAPCreditBasedReconfigureResult)
    /// A code LE does not define (including BR/EDR-only commands), kept whole.
    case unknown(L2CAPSignalingCommand)

    /// Decodes one signaling C-frame payload.
    public init(bytes: [UInt8]) throws(WireError) {
        let command = try L2CAPSignalingCommand(bytes: bytes)
        var r = ByteReader(command.data)
        let id = command.identifier
        switch command.code {
        case .commandReject:
            let reason = try r.readUInt16("Reason")
            switch reason {
            case 0x0000: self = .commandReject(identifier: id, reason: .commandNotUnderstood)
            case 0x0001: self = .commandReject(identifier: id, reason: .signalingMTUExceeded(actualMTU: try r.readUInt16("Actual MTU")))
            case 0x0002:
                let local = try r.readUInt16("Local CID")
                self = .commandReject(identifier: id, reason: .invalidCID(local: local, remote: try r.readUInt16("Remote CID")))
            default: throw WireError(.invalidValue, "Command Reject reason 0x\([UInt8(reason >> 8), UInt8(truncatingIfNeeded: reason)].hexString())")
            }
        case .disconnectionRequest, .disconnectionResponse:
            let destination = try r.readUInt16("Destination CID")
            let source = try r.readUInt16("Source CID")
            self = command.code == .disconnectionRequest
                ? .disconnectionRequest(identifier: id, destinationCID: destination, sourceCID: source)
                : .disconnectionResponse(identifier: id, destinationCID: destination, sourceCID: source)
        case .connectionParameterUpdateRequest:
            self = .connectionParameterUpdateRequest(identifier: id, try .init(from: &r))
        case .connectionParameterUpdateResponse:
            self = .connectionParameterUpdateResponse(identifier: id, result: .init(rawValue: try r.readUInt16("Result")))
        case .leCreditBasedConnectionRequest:
            self = .leCreditBasedConnectionRequest(identifier: id, try .init(from: &r))
        case .leCreditBasedConnectionResponse:
            self = .leCreditBasedConnectionResponse(identifier: id, try .init(from: &r))
        case .flowControlCredit:
            let cid = try r.readUInt16("CID")
            self = .flowControlCredit(identifier: id, cid: cid, credits: try r.readUInt16("Credits"))
        case .creditBasedConnectionRequest:
            self = .creditBasedConnectionRequest(identifier: id, try .init(from: &r))
        case .creditBasedConnectionResponse:
            self = .creditBasedConnectionResponse(identifier: id, try .init(from: &r))
        case .creditBasedReconfigureRequest:
            self = .creditBasedReconfigureRequest(identifier: id, try .init(from: &r))
        case .creditBasedReconfigureResponse:
            self = .creditBasedReconfigureResponse(identifier: id, result: .init(rawValue: try r.readUInt16("Result")))
        default:
            self = .unknown(command)
            return
        }
        try r.expectEnd("signaling command data")
    }

    /// The identifier of a signaling payload whose header is readable, even if its data is malformed.
    public static func identifier(of bytes: [UInt8]) -> UInt8? { bytes.count >= 2 ? bytes[1] : nil }

    /// The command as a C-frame payload.
    public var command: L2CAPSignalingCommand {
        var w = ByteWriter()
        let code: L2CAPSignalingCode
        let id: UInt8
        switch self {
        case .commandReject(let i, let reason):
            (code, id) = (.commandReject, i)
            switch reason {
            case .commandNotUnderstood: w.write(UInt16(0))
            case .signalingMTUExceeded(let mtu): w.write(UInt16(1)); w.write(mtu)
            case .invalidCID(let local, let remote): w.write(UInt16(2)); w.write(local); w.write(remote)
            }
        case .disconnectionRequest(let i, let d, let s):
            (code, id) = (.disconnectionRequest, i); w.write(d); w.write(s)
        case .disconnectionResponse(let i, let d, let s):
            (code, id) = (.disconnectionResponse, i); w.write(d); w.write(s)
        case .connectionParameterUpdateRequest(let i, let p):
            (code, id) = (.connectionParameterUpdateRequest, i); p.encode(into: &w)
        case .connectionParameterUpdateResponse(let i, let result):
            (code, id) = (.connectionParameterUpdateResponse, i); w.write(result.rawValue)
        case .leCreditBasedConnectionRequest(let i, let p):
            (code, id) = (.leCreditBasedConnectionRequest, i); p.encode(into: &w)
        case .leCreditBasedConnectionResponse(let i, let p):
            (code, id) = (.leCreditBasedConnectionResponse, i); p.encode(into: &w)
        case .flowControlCredit(let i, let cid, let credits):
            (code, id) = (.flowControlCredit, i); w.write(cid); w.write(credits)
        case .creditBasedConnectionRequest(let i, let p):
            (code, id) = (.creditBasedConnectionRequest, i); p.encode(into: &w)
        case .creditBasedConnectionResponse(let i, let p):
            (code, id) = (.creditBasedConnectionResponse, i); p.encode(into: &w)
        case .creditBasedReconfigureRequest(let i, let p):
            (code, id) = (.creditBasedReconfigureRequest, i); p.encode(into: &w)
        case .creditBasedReconfigureResponse(let i, let result):
            (code, id) = (.creditBasedReconfigureResponse, i); w.write(result.rawValue)
        case .unknown(let command):
            return command
        }
        return L2CAPSignalingCommand(code: code, identifier: id, data: w.bytes)
    }

    /// The C-frame payload.
    public var encoded: [UInt8] { command.encoded }
}
