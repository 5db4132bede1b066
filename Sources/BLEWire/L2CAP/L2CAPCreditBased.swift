/// A Simplified Protocol/Service Multiplexer on LE. Core 5.4, Vol 3, Part A, 4.22. Open code.
///
/// SPSMs 0x0001–0x007F are fixed (assigned by the Bluetooth SIG), 0x0080–0x00FF are dynamic (chosen by the
/// server and published, for example in a GATT characteristic); every other value is reserved on LE.
public struct L2CAPSPSM: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }
    /// The Enhanced ATT bearer (0x0027). Assigned Numbers, 5.4.
    public static let eatt = L2CAPSPSM(rawValue: 0x0027)
    /// Object Transfer Service (0x0025). Assigned Numbers, 5.4.
    public static let ots = L2CAPSPSM(rawValue: 0x0025)
    /// Internet Protocol Support Profile (0x0023). Assigned Numbers, 5.4.
    public static let ipsp = L2CAPSPSM(rawValue: 0x0023)
    /// Whether the SPSM is in the SIG-assigned range 0x0001–0x007F.
    public var isFixed: Bool { (0x0001...0x007F).contains(rawValue) }
    /// Whether the SPSM is in the dynamic range 0x0080–0x00FF.
    public var isDynamic: Bool { (0x0080...0x00FF).contains(rawValue) }
    /// Whether LE allows the SPSM at all (fixed or dynamic).
    public var isValid: Bool { isFixed || isDynamic }
    public var description: String { "SPSM 0x" + [UInt8(rawValue >> 8), UInt8(truncatingIfNeeded: rawValue)].hexString() }
}

/// The result of an LE credit based connection (L2CAP_LE_CREDIT_BASED_CONNECTION_RSP) or of a credit based
/// connection (L2CAP_CREDIT_BASED_CONNECTION_RSP). Core 5.4, Vol 3, Part A, 4.23 and 4.26. Open code.
///
/// The two responses share their values; 0x000C–0x000F exist only in L2CAP_CREDIT_BASED_CONNECTION_RSP, where
/// 0x0004, 0x0009 and 0x000A mean that *some* of the requested channels were refused (their Destination CID is 0).
public struct L2CAPCreditBasedConnectionResult: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }
    /// Connection successful (0x0000).
    public static let success = L2CAPCreditBasedConnectionResult(rawValue: 0x0000)
    /// Refused: SPSM not supported (0x0002).
    public static let spsmNotSupported = L2CAPCreditBasedConnectionResult(rawValue: 0x0002)
    /// Refused: no resources available (0x0004).
    public static let noResourcesAvailable = L2CAPCreditBasedConnectionResult(rawValue: 0x0004)
    /// Refused: insufficient authentication (0x0005).
    public static let insufficientAuthentication = L2CAPCreditBasedConnectionResult(rawValue: 0x0005)
    /// Refused: insufficient authorization (0x0006).
    public static let insufficientAuthorization = L2CAPCreditBasedConnectionResult(rawValue: 0x0006)
    /// Refused: encryption key size too short (0x0007).
    public static let encryptionKeySizeTooShort = L2CAPCreditBasedConnectionResult(rawValue: 0x0007)
    /// Refused: insufficient encryption (0x0008).
    public static let insufficientEncryption = L2CAPCreditBasedConnectionResult(rawValue: 0x0008)
    /// Refused: invalid Source CID (0x0009).
    public static let invalidSourceCID = L2CAPCreditBasedConnectionResult(rawValue: 0x0009)
    /// Refused: Source CID already allocated (0x000A).
    public static let sourceCIDAlreadyAllocated = L2CAPCreditBasedConnectionResult(rawValue: 0x000A)
    /// Refused: unacceptable parameters (0x000B).
    public static let unacceptableParameters = L2CAPCreditBasedConnectionResult(rawValue: 0x000B)
    /// All refused: invalid parameters (0x000C, enhanced only).
    public static let invalidParameters = L2CAPCreditBasedConnectionResult(rawValue: 0x000C)
    /// All pending: no further information available (0x000D, enhanced only).
    public static let pendingNoFurtherInformation = L2CAPCreditBasedConnectionResult(rawValue: 0x000D)
    /// All pending: authentication pending (0x000E, enhanced only).
    public static let pendingAuthentication = L2CAPCreditBasedConnectionResult(rawValue: 0x000E)
    /// All pending: authorization pending (0x000F, enhanced only).
    public static let pendingAuthorization = L2CAPCreditBasedConnectionResult(rawValue: 0x000F)

    /// Whether the result is one of the "pending" results (a final response follows).
    public var isPending: Bool { (0x000D...0x000F).contains(rawValue) }

    public var description: String {
        let name: String
        switch self {
        case .success: name = "success"
        case .spsmNotSupported: name = "SPSM not supported"
        case .noResourcesAvailable: name = "no resources available"
        case .insufficientAuthentication: name = "insufficient authentication"
        case .insufficientAuthorization: name = "insufficient authorization"
        case .encryptionKeySizeTooShort: name = "encryption key size too short"
        case .insufficientEncryption: name = "insufficient encryption"
        case .invalidSourceCID: name = "invalid Source CID"
        case .sourceCIDAlreadyAllocated: name = "Source CID already allocated"
        case .unacceptableParameters: name = "unacceptable parameters"
        case .invalidParameters: name = "invalid parameters"
        case .pendingNoFurtherInformation: name = "pending"
        case .pendingAuthentication: name = "authentication pending"
        case .pendingAuthorization: name = "authorization pending"
        default: name = "reserved"
        }
        return "\(name) (0x" + [UInt8(rawValue >> 8), UInt8(truncatingIfNeeded: rawValue)].hexString() + ")"
    }
}

/// The result of L2CAP_CREDIT_BASED_RECONFIGURE_RSP. Core 5.4, Vol 3, Part A, 4.28. Open code.
public struct L2CAPCreditBasedReconfigureResult: RawRepresentable, Hashable, Sendable {
    public var rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }
    /// Reconfiguration successful (0x0000).
    public static let success = L2CAPCreditBasedReconfigureResult(rawValue: 0x0000)
    /// Failed: reduction in size of MTU not allowed (0x0001).
    public static let mtuReductionNotAllowed = L2CAPCreditBasedReconfigureResult(rawValue: 0x0001)
    /// Failed: reduction in size of MPS not allowed for more than one channel at a time (0x0002).
    public static let mpsReductionNotAllowed = L2CAPCreditBasedReconfigureResult(rawValue: 0x0002)
    /// Failed: one or more Destination CIDs invalid (0x0003).
    public static let invalidDestinationCID = L2CAPCreditBasedReconfigureResult(rawValue: 0x0003)
    /// Failed: other unacceptable parameters (0x0004).
    public static let unacceptableParameters = L2CAPCreditBasedReconfigureResult(rawValue: 0x0004)
}

/// Reads a list of 16-bit CIDs filling the rest of `r` (an odd byte count throws).
private func readCIDList(_ r: inout ByteReader, _ field: String) throws(WireError) -> [UInt16] {
    guard r.remainingCount % 2 == 0 else {
        throw WireError(.lengthMismatch, "\(field): \(r.remainingCount) byte(s) is not a whole number of CIDs")
    }
    var cids: [UInt16] = []
    while !r.isAtEnd { cids.append(try r.readUInt16(field)) }
    return cids
}

/// L2CAP_CREDIT_BASED_CONNECTION_REQ (enhanced credit based flow control mode). Core 5.4, Vol 3, Part A, 4.25.
///
/// Decoding accepts any whole number of Source CIDs so that a receiver can refuse a list that is empty or longer
/// than ``maximumChannelCount`` with a response rather than a Command Reject.
public struct L2CAPCreditBasedConnectionRequest: Hashable, Sendable, WireCodable {
    /// The most channels one request may open.
    public static let maximumChannelCount = 5
    /// `SPSM`.
    public var spsm: L2CAPSPSM
    /// `MTU` (at least 64).
    public var mtu: UInt16
    /// `MPS` (64–65533).
    public var mps: UInt16
    /// `Initial Credits`, for each channel.
    public var initialCredits: UInt16
    /// `Source CID` list (1–5 entries).
    public var sourceCIDs: [UInt16]
    /// Creates an L2CAP_CREDIT_BASED_CONNECTION_REQ for the service `spsm` that opens one channel per entry of
    /// `sourceCIDs`, all with this MTU, MPS and initial credits.
    public init(spsm: L2CAPSPSM, mtu: UInt16, mps: UInt16, initialCredits: UInt16, sourceCIDs: [UInt16]) {
        self.spsm = spsm
        self.mtu = mtu
        self.mps = mps
        self.initialCredits = initialCredits
        self.sourceCIDs = sourceCIDs
    }
    public init(from r: inout ByteReader) throws(WireError) {
        spsm = L2CAPSPSM(rawValue: try r.readUInt16("SPSM"))
        mtu = try r.readUInt16("MTU")
        mps = try r.readUInt16("MPS")
        initialCredits = try r.readUInt16("Initial Credits")
        sourceCIDs = try readCIDList(&r, "Source CID")
    }
    public func encode(into w: inout ByteWriter) {
        for v in [spsm.rawValue, mtu, mps, initialCredits] + sourceCIDs { w.write(v) }
    }
}

/// L2CAP_CREDIT_BASED_CONNECTION_RSP. Core 5.4, Vol 3, Part A, 4.26.
///
/// One Destination CID per requested channel, in the request's order; 0x0000 marks a refused channel.
public struct L2CAPCreditBasedConnectionResponse: Hashable, Sendable, WireCodable {
    /// `MTU`.
    public var mtu: UInt16
    /// `MPS`.
    public var mps: UInt16
    /// `Initial Credits`, for each channel.
    public var initialCredits: UInt16
    /// `Result`.
    public var result: L2CAPCreditBasedConnectionResult
    /// `Destination CID` list.
    public var destinationCIDs: [UInt16]
    /// Creates an L2CAP_CREDIT_BASED_CONNECTION_RSP with the answering side's MTU, MPS, initial credits, the result,
    /// and one destination CID per requested channel.
    public init(mtu: UInt16, mps: UInt16, initialCredits: UInt16, result: L2CAPCreditBasedConnectionResult,
                destinationCIDs: [UInt16]) {
        self.mtu = mtu
        self.mps = mps
        self.initialCredits = initialCredits
        self.result = result
        self.destinationCIDs = destinationCIDs
    }
    public init(from r: inout ByteReader) throws(WireError) {
        mtu = try r.readUInt16("MTU")
        mps = try r.readUInt16("MPS")
        initialCredits = try r.readUInt16("Initial Credits")
        result = L2CAPCreditBasedConnectionResult(rawValue: try r.readUInt16("Result"))
        destinationCIDs = try readCIDList(&r, "Destination CID")
    }
    public func encode(into w: inout ByteWriter) {
        for v in [mtu, mps, initialCredits, result.rawValue] + destinationCIDs { w.write(v) }
    }
}

/// L2CAP_CREDIT_BASED_RECONFIGURE_REQ. Core 5.4, Vol 3, Part A, 4.27.
///
/// The sender announces new receive `MTU` and `MPS` values for its channels, named by the CIDs the *receiver*
/// of the request sends to (the sender's own CIDs, which are the receiver's Destination CIDs).
public struct L2CAPCreditBasedReconfigureRequest: Hashable, Sendable, WireCodable {
    /// `MTU` (at least 64; never smaller than before).
    public var mtu: UInt16
    /// `MPS` (64–65533).
    public var mps: UInt16
    /// `Destination CID` list (1–5 entries).
    public var destinationCIDs: [UInt16]
    /// Creates an L2CAP_CREDIT_BASED_RECONFIGURE_REQ announcing a new receive MTU and MPS for the channels
    /// `destinationCIDs`.
    public init(mtu: UInt16, mps: UInt16, destinationCIDs: [UInt16]) {
        self.mtu = mtu
        self.mps = mps
        self.destinationCIDs = destinationCIDs
    }
    public init(from r: inout ByteReader) throws(WireError) {
        mtu = try r.readUInt16("MTU")
        mps = try r.readUInt16("MPS")
        destinationCIDs = try readCIDList(&r, "Destination CID")
    }
    public func encode(into w: inout ByteWriter) {
        for v in [mtu, mps] + destinationCIDs { w.write(v) }
    }
}
