/// An SMP command code. Core 5.4, Vol 3, Part H, 3.3. Open code.
public struct SMPCode: RawRepresentable, Hashable, Sendable {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// Pairing request (0x01).
    public static let pairingRequest = SMPCode(rawValue: 0x01)
    /// Pairing response (0x02).
    public static let pairingResponse = SMPCode(rawValue: 0x02)
    /// Pairing confirm (0x03).
    public static let pairingConfirm = SMPCode(rawValue: 0x03)
    /// Pairing random (0x04).
    public static let pairingRandom = SMPCode(rawValue: 0x04)
    /// Pairing failed (0x05).
    public static let pairingFailed = SMPCode(rawValue: 0x05)
    /// Encryption information (0x06).
    public static let encryptionInformation = SMPCode(rawValue: 0x06)
    /// Central identification (0x07).
    public static let centralIdentification = SMPCode(rawValue: 0x07)
    /// Identity information (0x08).
    public static let identityInformation = SMPCode(rawValue: 0x08)
    /// Identity address information (0x09).
    public static let identityAddressInformation = SMPCode(rawValue: 0x09)
    /// Signing information (0x0A).
    public static let signingInformation = SMPCode(rawValue: 0x0A)
    /// Security request (0x0B).
    public static let securityRequest = SMPCode(rawValue: 0x0B)
    /// Pairing public key (0x0C).
    public static let pairingPublicKey = SMPCode(rawValue: 0x0C)
    /// Pairing DH key check (0x0D).
    public static let pairingDHKeyCheck = SMPCode(rawValue: 0x0D)
    /// Keypress notification (0x0E).
    public static let keypressNotification = SMPCode(rawValue: 0x0E)

    /// Whether the code is reserved for future use (0x00, and 0x0F to 0xFF): a PDU with such a code is ignored.
    /// Core 5.4, Vol 3, Part H, 3.3.
    public var isReserved: Bool { rawValue == 0x00 || rawValue >= 0x0F }
}

/// Pairing Failed reasons. Core 5.4, Vol 3, Part H, 3.5.5. Open code.
public struct SMPPairingFailedReason: RawRepresentable, Hashable, Sendable, Error, CustomStringConvertible {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// Passkey entry failed (0x01).
    public static let passkeyEntryFailed = SMPPairingFailedReason(rawValue: 0x01)
    /// OOB not available (0x02).
    public static let oobNotAvailable = SMPPairingFailedReason(rawValue: 0x02)
    /// Authentication requirements (0x03).
    public static let authenticationRequirements = SMPPairingFailedReason(rawValue: 0x03)
    /// Confirm value failed (0x04).
    public static let confirmValueFailed = SMPPairingFailedReason(rawValue: 0x04)
    /// Pairing not supported (0x05).
    public static let pairingNotSupported = SMPPairingFailedReason(rawValue: 0x05)
    /// Encryption key size (0x06).
    public static let encryptionKeySize = SMPPairingFailedReason(rawValue: 0x06)
    /// Command not supported (0x07).
    public static let commandNotSupported = SMPPairingFailedReason(rawValue: 0x07)
    /// Unspecified reason (0x08).
    public static let unspecifiedReason = SMPPairingFailedReason(rawValue: 0x08)
    /// Repeated attempts (0x09).
    public static let repeatedAttempts = SMPPairingFailedReason(rawValue: 0x09)
    /// Invalid parameters (0x0A).
    public static let invalidParameters = SMPPairingFailedReason(rawValue: 0x0A)
    /// Dh key check failed (0x0B).
    public static let dhKeyCheckFailed = SMPPairingFailedReason(rawValue: 0x0B)
    /// Numeric comparison failed (0x0C).
    public static let numericComparisonFailed = SMPPairingFailedReason(rawValue: 0x0C)
    /// BR EDR pairing in progress (0x0D).
    public static let brEDRPairingInProgress = SMPPairingFailedReason(rawValue: 0x0D)
    /// Cross transport key derivation not allowed (0x0E).
    public static let crossTransportKeyDerivationNotAllowed = SMPPairingFailedReason(rawValue: 0x0E)
    /// Key rejected (0x0F).
    public static let keyRejected = SMPPairingFailedReason(rawValue: 0x0F)

    public var description: String {
        let names = ["", "Passkey Entry Failed", "OOB Not Available", "Authentication Requirements", "Confirm Value Failed",
                     "Pairing Not Supported", "Encryption Key Size", "Command Not Supported", "Unspecified Reason",
                     "Repeated Attempts", "Invalid Parameters", "DHKey Check Failed", "Numeric Comparison Failed",
                     "BR/EDR pairing in progress", "Cross-transport Key Derivation/Generation not allowed", "Key Rejected"]
        let name = Int(rawValue) < names.count && rawValue > 0 ? names[Int(rawValue)] : "SMP reason"
        return "\(name) (0x\([rawValue].hexString()))"
    }
}

/// IO capability. Core 5.4, Vol 3, Part H, 3.5.1. Open code.
public struct SMPIOCapability: RawRepresentable, Hashable, Sendable {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// Display only (0x00).
    public static let displayOnly = SMPIOCapability(rawValue: 0x00)
    /// Display yes no (0x01).
    public static let displayYesNo = SMPIOCapability(rawValue: 0x01)
    /// Keyboard only (0x02).
    public static let keyboardOnly = SMPIOCapability(rawValue: 0x02)
    /// No input no output (0x03).
    public static let noInputNoOutput = SMPIOCapability(rawValue: 0x03)
    /// Keyboard display (0x04).
    public static let keyboardDisplay = SMPIOCapability(rawValue: 0x04)
}

/// AuthReq. Core 5.4, Vol 3, Part H, 3.5.1.
public struct SMPAuthRequirements: OptionSet, Hashable, Sendable {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// Bonding_Flags = 0b01.
    public static let bonding = SMPAuthRequirements(rawValue: 0x01)
    /// MITM (0x04).
    public static let mitm = SMPAuthRequirements(rawValue: 0x04)
    /// Secure connections (0x08).
    public static let secureConnections = SMPAuthRequirements(rawValue: 0x08)
    /// Keypress (0x10).
    public static let keypress = SMPAuthRequirements(rawValue: 0x10)
    /// Ct 2 (0x20).
    public static let ct2 = SMPAuthRequirements(rawValue: 0x20)
}

/// Key distribution flags. Core 5.4, Vol 3, Part H, 3.6.1.
public struct SMPKeyDistribution: OptionSet, Hashable, Sendable {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// Encryption key (0x01).
    public static let encryptionKey = SMPKeyDistribution(rawValue: 0x01)
    /// Identity key (0x02).
    public static let identityKey = SMPKeyDistribution(rawValue: 0x02)
    /// Signing key (0x04).
    public static let signingKey = SMPKeyDistribution(rawValue: 0x04)
    /// Link key (0x08).
    public static let linkKey = SMPKeyDistribution(rawValue: 0x08)
}

/// Pairing Request / Pairing Response parameters. Core 5.4, Vol 3, Part H, 3.5.1 and 3.5.2.
public struct SMPPairingFeatures: Hashable, Sendable, WireCodable {
    /// `IO Capability`.
    public var ioCapability: SMPIOCapability
    /// 0x01: OOB data present.
    public var oobDataFlag: UInt8
    /// `AuthReq`.
    public var authRequirements: SMPAuthRequirements
    /// 7–16.
    public var maximumEncryptionKeySize: UInt8
    /// `Initiator Key Distribution`.
    public var initiatorKeyDistribution: SMPKeyDistribution
    /// `Responder Key Distribution`.
    public var responderKeyDistribution: SMPKeyDistribution

    /// Creates the features one side offers in a Pairing Request or Response: its IO capability, OOB flag,
    /// authentication requirements, largest key size and the keys each side should distribute.
    public init(ioCapability: SMPIOCapability, oobDataFlag: UInt8 = 0, authRequirements: SMPAuthRequirements,
                maximumEncryptionKeySize: UInt8 = 16, initiatorKeyDistribution: SMPKeyDistribution,
                responderKeyDistribution: SMPKeyDistribution) {
        self.ioCapability = ioCapability
        self.oobDataFlag = oobDataFlag
        self.authRequirements = authRequirements
        self.maximumEncryptionKeySize = maximumEncryptionKeySize
        self.initiatorKeyDistribution = initiatorKeyDistribution
        self.responderKeyDistribution = responderKeyDistribution
    }

    public init(from r: inout ByteReader) throws(WireError) {
        ioCapability = SMPIOCapability(rawValue: try r.readUInt8("IO Capability"))
        oobDataFlag = try r.readUInt8("OOB data flag")
        authRequirements = SMPAuthRequirements(rawValue: try r.readUInt8("AuthReq"))
        maximumEncryptionKeySize = try r.readUInt8("Maximum Encryption Key Size")
        initiatorKeyDistribution = SMPKeyDistribution(rawValue: try r.readUInt8("Initiator Key Distribution"))
        responderKeyDistribution = SMPKeyDistribution(rawValue: try r.readUInt8("Responder Key Distribution"))
        try r.expectEnd("Pairing Request/Response")
        guard (7...16).contains(maximumEncryptionKeySize) else {
            throw WireError(.invalidValue, "Maximum Encryption Key Size \(maximumEncryptionKeySize) outside 7...16")
        }
    }

    public func encode(into w: inout ByteWriter) {
        w.write(ioCapability.rawValue)
        w.write(oobDataFlag)
        w.write(authRequirements.rawValue)
        w.write(maximumEncryptionKeySize)
        w.write(initiatorKeyDistribution.rawValue)
        w.write(responderKeyDistribution.rawValue)
    }
}

/// An SMP PDU. Core 5.4, Vol 3, Part H, 3.
///
/// Unknown codes decode to ``unknown(code:data:)`` (answer Pairing Failed 0x07 Command Not Supported); known codes
/// with the wrong length throw (answer Pairing Failed 0x0A Invalid Parameters).
public enum SMPPDU: Hashable, Sendable, WireCodable {
    /// Pairing request.
    case pairingRequest(SMPPairingFeatures)
    /// Pairing response.
    case pairingResponse(SMPPairingFeatures)
    /// Mconfirm / Sconfirm (16 bytes).
    case pairingConfirm([UInt8])
    /// Mrand / Srand (16 bytes).
    case pairingRandom([UInt8])
    /// Pairing failed.
    case pairingFailed(SMPPairingFailedReason)
    /// LTK (16 bytes).
    case encryptionInformation(longTermKey: [UInt8])
    /// Central identification.
    case centralIdentification(ediv: UInt16, rand: UInt64)
    /// IRK (16 bytes).
    case identityInformation(identityResolvingKey: [UInt8])
    /// Identity address information.
    case identityAddressInformation(LEAddress)
    /// CSRK (16 bytes).
    case signingInformation(signatureKey: [UInt8])
    /// Security request.
    case securityRequest(SMPAuthRequirements)
    /// Public key X and Y (32 bytes each, little-endian).
    case pairingPublicKey(x: [UInt8], y: [UInt8])
    /// Ea / Eb (16 bytes).
    case pairingDHKeyCheck([UInt8])
    /// 0 started, 1 digit entered, 2 digit erased, 3 cleared, 4 completed.
    case keypressNotification(UInt8)
    /// Unknown.
    case unknown(code: SMPCode, data: [UInt8])

    public init(from r: inout ByteReader) throws(WireError) {
        let code = SMPCode(rawValue: try r.readUInt8("SMP code"))
        func key(_ r: inout ByteReader, _ name: String) throws(WireError) -> [UInt8] {
            let bytes = try r.readBytes(16, name)
            try r.expectEnd(name)
            return bytes
        }
        switch code {
        case .pairingRequest: self = .pairingRequest(try SMPPairingFeatures(from: &r))
        case .pairingResponse: self = .pairingResponse(try SMPPairingFeatures(from: &r))
        case .pairingConfirm: self = .pairingConfirm(try key(&r, "Confirm Value"))
        case .pairingRandom: self = .pairingRandom(try key(&r, "Random Value"))
        case .pairingFailed:
            self = .pairingFailed(SMPPairingFailedReason(rawValue: try r.readUInt8("Reason")))
            try r.expectEnd("Pairing Failed")
        case .encryptionInformation: self = .encryptionInformation(longTermKey: try key(&r, "Long Term Key"))
        case .centralIdentification:
            let ediv = try r.readUInt16("EDIV")
            self = .centralIdentification(ediv: ediv, rand: try r.readUInt64("Rand"))
            try r.expectEnd("Central Identification")
        case .identityInformation: self = .identityInformation(identityResolvingKey: try key(&r, "Identity Resolving Key"))
        case .identityAddressInformation:
            let type = try r.readUInt8("AddrType")
            guard type <= 1 else { throw WireError(.invalidValue, "identity address type \(type)") }
            self = .identityAddressInformation(LEAddress(try BluetoothAddress(from: &r), type: LEAddressType(rawValue: type)))
            try r.expectEnd("Identity Address Information")
        case .signingInformation: self = .signingInformation(signatureKey: try key(&r, "Signature Key"))
        case .securityRequest:
            self = .securityRequest(SMPAuthRequirements(rawValue: try r.readUInt8("AuthReq")))
            try r.expectEnd("Security Request")
        case .pairingPublicKey:
            let x = try r.readBytes(32, "Public Key X")
            self = .pairingPublicKey(x: x, y: try r.readBytes(32, "Public Key Y"))
            try r.expectEnd("Pairing Public Key")
        case .pairingDHKeyCheck: self = .pairingDHKeyCheck(try key(&r, "DHKey Check"))
        case .keypressNotification:
            self = .keypressNotification(try r.readUInt8("Notification Type"))
            try r.expectEnd("Keypress Notification")
        default: self = .unknown(code: code, data: r.readRemaining())
        }
    }

    public func encode(into w: inout ByteWriter) {
        func fixed(_ bytes: [UInt8], _ count: Int) -> [UInt8] { Array((bytes + [UInt8](repeating: 0, count: count)).prefix(count)) }
        switch self {
        case .pairingRequest(let f): w.write(SMPCode.pairingRequest.rawValue); f.encode(into: &w)
        case .pairingResponse(let f): w.write(SMPCode.pairingResponse.rawValue); f.encode(into: &w)
        case .pairingConfirm(let v): w.write(SMPCode.pairingConfirm.rawValue); w.write(fixed(v, 16))
        case .pairingRandom(let v): w.write(SMPCode.pairingRandom.rawValue); w.write(fixed(v, 16))
        case .pairingFailed(let reason): w.write(SMPCode.pairingFailed.rawValue); w.write(reason.rawValue)
        case .encryptionInformation(let k): w.write(SMPCode.encryptionInformation.rawValue); w.write(fixed(k, 16))
        case .centralIdentification(let ediv, let rand):
            w.write(SMPCode.centralIdentification.rawValue); w.write(ediv); w.write(rand)
        case .identityInformation(let k): w.write(SMPCode.identityInformation.rawValue); w.write(fixed(k, 16))
        case .identityAddressInformation(let a):
            w.write(SMPCode.identityAddressInformation.rawValue); w.write(a.type.rawValue); a.address.encode(into: &w)
        case .signingInformation(let k): w.write(SMPCode.signingInformation.rawValue); w.write(fixed(k, 16))
        case .securityRequest(let auth): w.write(SMPCode.securityRequest.rawValue); w.write(auth.rawValue)
        case .pairingPublicKey(let x, let y):
            w.write(SMPCode.pairingPublicKey.rawValue); w.write(fixed(x, 32)); w.write(fixed(y, 32))
        case .pairingDHKeyCheck(let v): w.write(SMPCode.pairingDHKeyCheck.rawValue); w.write(fixed(v, 16))
        case .keypressNotification(let t): w.write(SMPCode.keypressNotification.rawValue); w.write(t)
        case .unknown(let code, let data): w.write(code.rawValue); w.write(data)
        }
    }
}
