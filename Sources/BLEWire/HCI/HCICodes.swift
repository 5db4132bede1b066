/// An HCI command opcode: OGF (6 bits) and OCF (10 bits).
///
/// Core 5.4, Vol 4, Part E, 5.4.1 and 7. Open: unknown opcodes are representable.
public struct HCIOpcode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }
    /// Creates an opcode from its group and command fields.
    public init(ogf: UInt8, ocf: UInt16) { rawValue = UInt16(ogf & 0x3F) << 10 | (ocf & 0x03FF) }

    /// The opcode group field.
    public var ogf: UInt8 { UInt8(truncatingIfNeeded: rawValue >> 10) }
    /// The opcode command field.
    public var ocf: UInt16 { rawValue & 0x03FF }

    // Link control (OGF 0x01)
    /// Disconnect (OGF 0x01, OCF 0x0006).
    public static let disconnect = HCIOpcode(ogf: 0x01, ocf: 0x0006)
    /// Read remote version information (OGF 0x01, OCF 0x001D).
    public static let readRemoteVersionInformation = HCIOpcode(ogf: 0x01, ocf: 0x001D)
    // Controller and baseband (OGF 0x03)
    /// Set event mask (OGF 0x03, OCF 0x0001).
    public static let setEventMask = HCIOpcode(ogf: 0x03, ocf: 0x0001)
    /// Reset (OGF 0x03, OCF 0x0003).
    public static let reset = HCIOpcode(ogf: 0x03, ocf: 0x0003)
    /// Write local name (OGF 0x03, OCF 0x0013).
    public static let writeLocalName = HCIOpcode(ogf: 0x03, ocf: 0x0013)
    /// Read local name (OGF 0x03, OCF 0x0014).
    public static let readLocalName = HCIOpcode(ogf: 0x03, ocf: 0x0014)
    /// Write LE host support (OGF 0x03, OCF 0x006D).
    public static let writeLEHostSupport = HCIOpcode(ogf: 0x03, ocf: 0x006D)
    /// Set event mask page 2 (OGF 0x03, OCF 0x0063).
    public static let setEventMaskPage2 = HCIOpcode(ogf: 0x03, ocf: 0x0063)
    // Informational (OGF 0x04)
    /// Read local version information (OGF 0x04, OCF 0x0001).
    public static let readLocalVersionInformation = HCIOpcode(ogf: 0x04, ocf: 0x0001)
    /// Read local supported commands (OGF 0x04, OCF 0x0002).
    public static let readLocalSupportedCommands = HCIOpcode(ogf: 0x04, ocf: 0x0002)
    /// Read local supported features (OGF 0x04, OCF 0x0003).
    public static let readLocalSupportedFeatures = HCIOpcode(ogf: 0x04, ocf: 0x0003)
    /// Read buffer size (OGF 0x04, OCF 0x0005).
    public static let readBufferSize = HCIOpcode(ogf: 0x04, ocf: 0x0005)
    /// Read BD_ADDR (OGF 0x04, OCF 0x0009).
    public static let readBDADDR = HCIOpcode(ogf: 0x04, ocf: 0x0009)
    // Status (OGF 0x05)
    /// Read RSSI (OGF 0x05, OCF 0x0005).
    public static let readRSSI = HCIOpcode(ogf: 0x05, ocf: 0x0005)
    // LE controller (OGF 0x08)
    /// LE set event mask (OGF 0x08, OCF 0x0001).
    public static let leSetEventMask = HCIOpcode(ogf: 0x08, ocf: 0x0001)
    /// LE read buffer size (OGF 0x08, OCF 0x0002).
    public static let leReadBufferSize = HCIOpcode(ogf: 0x08, ocf: 0x0002)
    /// LE read local supported features (OGF 0x08, OCF 0x0003).
    public static let leReadLocalSupportedFeatures = HCIOpcode(ogf: 0x08, ocf: 0x0003)
    /// LE set random address (OGF 0x08, OCF 0x0005).
    public static let leSetRandomAddress = HCIOpcode(ogf: 0x08, ocf: 0x0005)
    /// LE set advertising parameters (OGF 0x08, OCF 0x0006).
    public static let leSetAdvertisingParameters = HCIOpcode(ogf: 0x08, ocf: 0x0006)
    /// LE read advertising physical channel TX power (OGF 0x08, OCF 0x0007).
    public static let leReadAdvertisingPhysicalChannelTxPower = HCIOpcode(ogf: 0x08, ocf: 0x0007)
    /// LE set advertising data (OGF 0x08, OCF 0x0008).
    public static let leSetAdvertisingData = HCIOpcode(ogf: 0x08, ocf: 0x0008)
    /// LE set scan response data (OGF 0x08, OCF 0x0009).
    public static let leSetScanResponseData = HCIOpcode(ogf: 0x08, ocf: 0x0009)
    /// LE set advertising enable (OGF 0x08, OCF 0x000A).
    public static let leSetAdvertisingEnable = HCIOpcode(ogf: 0x08, ocf: 0x000A)
    /// LE set scan parameters (OGF 0x08, OCF 0x000B).
    public static let leSetScanParameters = HCIOpcode(ogf: 0x08, ocf: 0x000B)
    /// LE set scan enable (OGF 0x08, OCF 0x000C).
    public static let leSetScanEnable = HCIOpcode(ogf: 0x08, ocf: 0x000C)
    /// LE create connection (OGF 0x08, OCF 0x000D).
    public static let leCreateConnection = HCIOpcode(ogf: 0x08, ocf: 0x000D)
    /// LE create connection cancel (OGF 0x08, OCF 0x000E).
    public static let leCreateConnectionCancel = HCIOpcode(ogf: 0x08, ocf: 0x000E)
    /// LE read filter accept list size (OGF 0x08, OCF 0x000F).
    public static let leReadFilterAcceptListSize = HCIOpcode(ogf: 0x08, ocf: 0x000F)
    /// LE clear filter accept list (OGF 0x08, OCF 0x0010).
    public static let leClearFilterAcceptList = HCIOpcode(ogf: 0x08, ocf: 0x0010)
    /// LE add device to filter accept list (OGF 0x08, OCF 0x0011).
    public static let leAddDeviceToFilterAcceptList = HCIOpcode(ogf: 0x08, ocf: 0x0011)
    /// LE remove device from filter accept list (OGF 0x08, OCF 0x0012).
    public static let leRemoveDeviceFromFilterAcceptList = HCIOpcode(ogf: 0x08, ocf: 0x0012)
    /// LE connection update (OGF 0x08, OCF 0x0013).
    public static let leConnectionUpdate = HCIOpcode(ogf: 0x08, ocf: 0x0013)
    /// LE read remote features (OGF 0x08, OCF 0x0016).
    public static let leReadRemoteFeatures = HCIOpcode(ogf: 0x08, ocf: 0x0016)
    /// LE encrypt (OGF 0x08, OCF 0x0017).
    public static let leEncrypt = HCIOpcode(ogf: 0x08, ocf: 0x0017)
    /// LE rand (OGF 0x08, OCF 0x0018).
    public static let leRand = HCIOpcode(ogf: 0x08, ocf: 0x0018)
    /// LE enable encryption (OGF 0x08, OCF 0x0019).
    public static let leEnableEncryption = HCIOpcode(ogf: 0x08, ocf: 0x0019)
    /// LE long term key request reply (OGF 0x08, OCF 0x001A).
    public static let leLongTermKeyRequestReply = HCIOpcode(ogf: 0x08, ocf: 0x001A)
    /// LE long term key request negative reply (OGF 0x08, OCF 0x001B).
    public static let leLongTermKeyRequestNegativeReply = HCIOpcode(ogf: 0x08, ocf: 0x001B)
    /// LE read supported states (OGF 0x08, OCF 0x001C).
    public static let leReadSupportedStates = HCIOpcode(ogf: 0x08, ocf: 0x001C)
    /// LE remote connection parameter request reply (OGF 0x08, OCF 0x0020).
    public static let leRemoteConnectionParameterRequestReply = HCIOpcode(ogf: 0x08, ocf: 0x0020)
    /// LE remote connection parameter request negative reply (OGF 0x08, OCF 0x0021).
    public static let leRemoteConnectionParameterRequestNegativeReply = HCIOpcode(ogf: 0x08, ocf: 0x0021)
    /// LE set data length (OGF 0x08, OCF 0x0022).
    public static let leSetDataLength = HCIOpcode(ogf: 0x08, ocf: 0x0022)
    /// LE read suggested default data length (OGF 0x08, OCF 0x0023).
    public static let leReadSuggestedDefaultDataLength = HCIOpcode(ogf: 0x08, ocf: 0x0023)
    /// LE write suggested default data length (OGF 0x08, OCF 0x0024).
    public static let leWriteSuggestedDefaultDataLength = HCIOpcode(ogf: 0x08, ocf: 0x0024)
    /// LE clear resolving list (OGF 0x08, OCF 0x0029).
    public static let leClearResolvingList = HCIOpcode(ogf: 0x08, ocf: 0x0029)
    /// LE read resolving list size (OGF 0x08, OCF 0x002A).
    public static let leReadResolvingListSize = HCIOpcode(ogf: 0x08, ocf: 0x002A)
    /// LE set address resolution enable (OGF 0x08, OCF 0x002D).
    public static let leSetAddressResolutionEnable = HCIOpcode(ogf: 0x08, ocf: 0x002D)
    /// LE set resolvable private address timeout (OGF 0x08, OCF 0x002E).
    public static let leSetResolvablePrivateAddressTimeout = HCIOpcode(ogf: 0x08, ocf: 0x002E)
    /// LE read maximum data length (OGF 0x08, OCF 0x002F).
    public static let leReadMaximumDataLength = HCIOpcode(ogf: 0x08, ocf: 0x002F)
    /// LE read PHY (OGF 0x08, OCF 0x0030).
    public static let leReadPHY = HCIOpcode(ogf: 0x08, ocf: 0x0030)
    /// LE set default PHY (OGF 0x08, OCF 0x0031).
    public static let leSetDefaultPHY = HCIOpcode(ogf: 0x08, ocf: 0x0031)
    /// LE set PHY (OGF 0x08, OCF 0x0032).
    public static let leSetPHY = HCIOpcode(ogf: 0x08, ocf: 0x0032)
    /// LE set advertising set random address (OGF 0x08, OCF 0x0035).
    public static let leSetAdvertisingSetRandomAddress = HCIOpcode(ogf: 0x08, ocf: 0x0035)
    /// LE set extended advertising parameters [v1] (OGF 0x08, OCF 0x0036).
    public static let leSetExtendedAdvertisingParameters = HCIOpcode(ogf: 0x08, ocf: 0x0036)
    /// LE set extended advertising data (OGF 0x08, OCF 0x0037).
    public static let leSetExtendedAdvertisingData = HCIOpcode(ogf: 0x08, ocf: 0x0037)
    /// LE set extended scan response data (OGF 0x08, OCF 0x0038).
    public static let leSetExtendedScanResponseData = HCIOpcode(ogf: 0x08, ocf: 0x0038)
    /// LE set extended advertising enable (OGF 0x08, OCF 0x0039).
    public static let leSetExtendedAdvertisingEnable = HCIOpcode(ogf: 0x08, ocf: 0x0039)
    /// LE remove advertising set (OGF 0x08, OCF 0x003C).
    public static let leRemoveAdvertisingSet = HCIOpcode(ogf: 0x08, ocf: 0x003C)
    /// LE clear advertising sets (OGF 0x08, OCF 0x003D).
    public static let leClearAdvertisingSets = HCIOpcode(ogf: 0x08, ocf: 0x003D)
    /// LE extended create connection [v1] (OGF 0x08, OCF 0x0043).
    public static let leExtendedCreateConnection = HCIOpcode(ogf: 0x08, ocf: 0x0043)
    /// LE set extended scan parameters (OGF 0x08, OCF 0x0041).
    public static let leSetExtendedScanParameters = HCIOpcode(ogf: 0x08, ocf: 0x0041)
    /// LE set extended scan enable (OGF 0x08, OCF 0x0042).
    public static let leSetExtendedScanEnable = HCIOpcode(ogf: 0x08, ocf: 0x0042)
    /// LE read maximum advertising data length (OGF 0x08, OCF 0x003A).
    public static let leReadMaximumAdvertisingDataLength = HCIOpcode(ogf: 0x08, ocf: 0x003A)
    /// LE read number of supported advertising sets (OGF 0x08, OCF 0x003B).
    public static let leReadNumberOfSupportedAdvertisingSets = HCIOpcode(ogf: 0x08, ocf: 0x003B)
    /// LE read buffer size V 2 (OGF 0x08, OCF 0x0060).
    public static let leReadBufferSizeV2 = HCIOpcode(ogf: 0x08, ocf: 0x0060)

    public var description: String { "0x" + [UInt8(rawValue >> 8), UInt8(truncatingIfNeeded: rawValue)].hexString() }
}

/// An HCI event code. Core 5.4, Vol 4, Part E, 7.7. Open: unknown codes are representable.
public struct HCIEventCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// Disconnection complete (0x05).
    public static let disconnectionComplete = HCIEventCode(rawValue: 0x05)
    /// Encryption change (0x08).
    public static let encryptionChange = HCIEventCode(rawValue: 0x08)
    /// Read remote version information complete (0x0C).
    public static let readRemoteVersionInformationComplete = HCIEventCode(rawValue: 0x0C)
    /// Command complete (0x0E).
    public static let commandComplete = HCIEventCode(rawValue: 0x0E)
    /// Command status (0x0F).
    public static let commandStatus = HCIEventCode(rawValue: 0x0F)
    /// Hardware error (0x10).
    public static let hardwareError = HCIEventCode(rawValue: 0x10)
    /// Number of completed packets (0x13).
    public static let numberOfCompletedPackets = HCIEventCode(rawValue: 0x13)
    /// Data buffer overflow (0x1A).
    public static let dataBufferOverflow = HCIEventCode(rawValue: 0x1A)
    /// Encryption key refresh complete (0x30).
    public static let encryptionKeyRefreshComplete = HCIEventCode(rawValue: 0x30)
    /// LE meta (0x3E).
    public static let leMeta = HCIEventCode(rawValue: 0x3E)
    /// Vendor specific (0xFF).
    public static let vendorSpecific = HCIEventCode(rawValue: 0xFF)

    public var description: String { "0x" + [rawValue].hexString() }
}

/// An LE Meta event subevent code. Core 5.4, Vol 4, Part E, 7.7.65.
public struct HCILESubeventCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// Connection complete (0x01).
    public static let connectionComplete = HCILESubeventCode(rawValue: 0x01)
    /// Advertising report (0x02).
    public static let advertisingReport = HCILESubeventCode(rawValue: 0x02)
    /// Connection update complete (0x03).
    public static let connectionUpdateComplete = HCILESubeventCode(rawValue: 0x03)
    /// Read remote features complete (0x04).
    public static let readRemoteFeaturesComplete = HCILESubeventCode(rawValue: 0x04)
    /// Long term key request (0x05).
    public static let longTermKeyRequest = HCILESubeventCode(rawValue: 0x05)
    /// Remote connection parameter request (0x06).
    public static let remoteConnectionParameterRequest = HCILESubeventCode(rawValue: 0x06)
    /// Data length change (0x07).
    public static let dataLengthChange = HCILESubeventCode(rawValue: 0x07)
    /// Enhanced connection complete (0x0A).
    public static let enhancedConnectionComplete = HCILESubeventCode(rawValue: 0x0A)
    /// PHY update complete (0x0C).
    public static let phyUpdateComplete = HCILESubeventCode(rawValue: 0x0C)
    /// Extended advertising report (0x0D).
    public static let extendedAdvertisingReport = HCILESubeventCode(rawValue: 0x0D)
    /// Scan timeout (0x11).
    public static let scanTimeout = HCILESubeventCode(rawValue: 0x11)
    /// Advertising set terminated (0x12).
    public static let advertisingSetTerminated = HCILESubeventCode(rawValue: 0x12)

    public var description: String { "0x" + [rawValue].hexString() }
}

/// An HCI status / error code. Core 5.4, Vol 1, Part F. Open: unknown codes are representable.
public struct HCIStatus: RawRepresentable, Hashable, Sendable, Error, CustomStringConvertible {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// Success (0x00).
    public static let success = HCIStatus(rawValue: 0x00)
    /// Unknown command (0x01).
    public static let unknownCommand = HCIStatus(rawValue: 0x01)
    /// Unknown connection identifier (0x02).
    public static let unknownConnectionIdentifier = HCIStatus(rawValue: 0x02)
    /// Hardware failure (0x03).
    public static let hardwareFailure = HCIStatus(rawValue: 0x03)
    /// Page timeout (0x04).
    public static let pageTimeout = HCIStatus(rawValue: 0x04)
    /// Authentication failure (0x05).
    public static let authenticationFailure = HCIStatus(rawValue: 0x05)
    /// Pin or key missing (0x06).
    public static let pinOrKeyMissing = HCIStatus(rawValue: 0x06)
    /// Memory capacity exceeded (0x07).
    public static let memoryCapacityExceeded = HCIStatus(rawValue: 0x07)
    /// Connection timeout (0x08).
    public static let connectionTimeout = HCIStatus(rawValue: 0x08)
    /// Connection limit exceeded (0x09).
    public static let connectionLimitExceeded = HCIStatus(rawValue: 0x09)
    /// Connection already exists (0x0B).
    public static let connectionAlreadyExists = HCIStatus(rawValue: 0x0B)
    /// Command disallowed (0x0C).
    public static let commandDisallowed = HCIStatus(rawValue: 0x0C)
    /// Connection rejected limited resources (0x0D).
    public static let connectionRejectedLimitedResources = HCIStatus(rawValue: 0x0D)
    /// Connection accept timeout exceeded (0x10).
    public static let connectionAcceptTimeoutExceeded = HCIStatus(rawValue: 0x10)
    /// Unsupported feature or parameter value (0x11).
    public static let unsupportedFeatureOrParameterValue = HCIStatus(rawValue: 0x11)
    /// Invalid command parameters (0x12).
    public static let invalidCommandParameters = HCIStatus(rawValue: 0x12)
    /// Remote user terminated connection (0x13).
    public static let remoteUserTerminatedConnection = HCIStatus(rawValue: 0x13)
    /// Remote device terminated low resources (0x14).
    public static let remoteDeviceTerminatedLowResources = HCIStatus(rawValue: 0x14)
    /// Remote device terminated power off (0x15).
    public static let remoteDeviceTerminatedPowerOff = HCIStatus(rawValue: 0x15)
    /// Connection terminated by local host (0x16).
    public static let connectionTerminatedByLocalHost = HCIStatus(rawValue: 0x16)
    /// Unsupported remote feature (0x1A).
    public static let unsupportedRemoteFeature = HCIStatus(rawValue: 0x1A)
    /// Invalid LMP or LL parameters (0x1E).
    public static let invalidLMPOrLLParameters = HCIStatus(rawValue: 0x1E)
    /// Unspecified error (0x1F).
    public static let unspecifiedError = HCIStatus(rawValue: 0x1F)
    /// LMP or LL response timeout (0x22).
    public static let lmpOrLLResponseTimeout = HCIStatus(rawValue: 0x22)
    /// Instant passed (0x28).
    public static let instantPassed = HCIStatus(rawValue: 0x28)
    /// Unacceptable connection parameters (0x3B).
    public static let unacceptableConnectionParameters = HCIStatus(rawValue: 0x3B)
    /// Advertising timeout (0x3C).
    public static let advertisingTimeout = HCIStatus(rawValue: 0x3C)
    /// Connection terminated MIC failure (0x3D).
    public static let connectionTerminatedMICFailure = HCIStatus(rawValue: 0x3D)
    /// Connection failed to be established (0x3E).
    public static let connectionFailedToBeEstablished = HCIStatus(rawValue: 0x3E)
    /// Unknown advertising identifier (0x42).
    public static let unknownAdvertisingIdentifier = HCIStatus(rawValue: 0x42)
    /// Limit reached (0x43).
    public static let limitReached = HCIStatus(rawValue: 0x43)
    /// Operation cancelled by host (0x44).
    public static let operationCancelledByHost = HCIStatus(rawValue: 0x44)
    /// Packet too long (0x45).
    public static let packetTooLong = HCIStatus(rawValue: 0x45)

    public var description: String {
        let name: String = switch self {
        case .success: "Success"
        case .unknownCommand: "Unknown HCI Command"
        case .unknownConnectionIdentifier: "Unknown Connection Identifier"
        case .hardwareFailure: "Hardware Failure"
        case .authenticationFailure: "Authentication Failure"
        case .pinOrKeyMissing: "PIN or Key Missing"
        case .memoryCapacityExceeded: "Memory Capacity Exceeded"
        case .connectionTimeout: "Connection Timeout"
        case .connectionLimitExceeded: "Connection Limit Exceeded"
        case .connectionAlreadyExists: "Connection Already Exists"
        case .commandDisallowed: "Command Disallowed"
        case .connectionAcceptTimeoutExceeded: "Connection Accept Timeout Exceeded"
        case .unsupportedFeatureOrParameterValue: "Unsupported Feature or Parameter Value"
        case .invalidCommandParameters: "Invalid HCI Command Parameters"
        case .remoteUserTerminatedConnection: "Remote User Terminated Connection"
        case .remoteDeviceTerminatedLowResources: "Remote Device Terminated Connection due to Low Resources"
        case .remoteDeviceTerminatedPowerOff: "Remote Device Terminated Connection due to Power Off"
        case .connectionTerminatedByLocalHost: "Connection Terminated By Local Host"
        case .unsupportedRemoteFeature: "Unsupported Remote Feature"
        case .unspecifiedError: "Unspecified Error"
        case .lmpOrLLResponseTimeout: "LMP/LL Response Timeout"
        case .unacceptableConnectionParameters: "Unacceptable Connection Parameters"
        case .advertisingTimeout: "Advertising Timeout"
        case .connectionTerminatedMICFailure: "Connection Terminated due to MIC Failure"
        case .connectionFailedToBeEstablished: "Connection Failed to be Established"
        case .operationCancelledByHost: "Operation Cancelled by Host"
        case .unknownAdvertisingIdentifier: "Unknown Advertising Identifier"
        case .limitReached: "Limit Reached"
        case .packetTooLong: "Packet Too Long"
        default: "HCI status"
        }
        return "\(name) (0x\([rawValue].hexString()))"
    }
}
