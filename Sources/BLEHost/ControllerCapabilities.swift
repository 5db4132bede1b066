import BLEWire

/// What a controller says it can do, as the host read it when it powered on: its version, the commands it lists,
/// its features, its buffers and limits.
///
/// The host reads it once per power-on (Core 5.4, Vol 4, Part E, 7.4 and 7.8) and keeps it: ``HCIHost/capabilities``.
/// It is also the host's gate: the host sends no command the controller does not list (``allows(_:)``), an API call
/// that needs something missing throws ``HostErrorCode/unsupportedByController(_:)``, and automatic steps that need
/// it are skipped.
public struct ControllerCapabilities: Sendable, Hashable {
    /// The versions and maker from Read Local Version Information. Core 5.4, Vol 4, Part E, 7.4.1.
    public struct Version: Sendable, Hashable {
        /// `HCI_Version`: the Core Specification version the HCI follows.
        public var hciVersion: HCIVersion
        /// `HCI_Subversion` (the revision; implementation-defined).
        public var hciRevision: UInt16
        /// `LMP_Version`: the Core Specification version of the link layer (LMP or PAL).
        public var lmpVersion: HCIVersion
        /// `LMP_Subversion` (implementation-defined).
        public var lmpSubversion: UInt16
        /// `Company_Identifier`: the controller's maker.
        public var company: CompanyIdentifier

        /// Creates a version record.
        public init(hciVersion: HCIVersion, hciRevision: UInt16, lmpVersion: HCIVersion, lmpSubversion: UInt16,
                    company: CompanyIdentifier) {
            self.hciVersion = hciVersion
            self.hciRevision = hciRevision
            self.lmpVersion = lmpVersion
            self.lmpSubversion = lmpSubversion
            self.company = company
        }
    }

    /// Where ``supportedCommands`` came from.
    public enum CommandSource: Sendable, Hashable, CustomStringConvertible {
        /// Not read yet: before power-on, nothing is gated.
        case unknown
        /// The controller's answer to Read Local Supported Commands.
        case controller
        /// The controller did not answer Read Local Supported Commands (it answered Unknown HCI Command, or an error),
        /// so the host assumes ``ControllerCapabilities/bluetooth40Commands``: what Core 4.0 requires of every LE
        /// controller, and nothing later. A controller that lacks even that fails those commands as it would have.
        case assumed

        public var description: String {
            switch self {
            case .unknown: "unknown"
            case .controller: "controller"
            case .assumed: "assumed"
            }
        }
    }

    /// Which command gave the ACL buffer sizes.
    public enum BufferSource: Sendable, Hashable, CustomStringConvertible {
        /// LE Read Buffer Size [v2] (0x2060).
        case leReadBufferSizeV2
        /// LE Read Buffer Size [v1] (0x2002).
        case leReadBufferSizeV1
        /// Read Buffer Size (0x1005): the buffers LE shares with BR/EDR (the LE command answered 0, or is not listed).
        case readBufferSize

        public var description: String {
            switch self {
            case .leReadBufferSizeV2: "LE Read Buffer Size [v2]"
            case .leReadBufferSizeV1: "LE Read Buffer Size [v1]"
            case .readBufferSize: "Read Buffer Size"
            }
        }
    }

    /// The controller's ACL data buffers for LE.
    public struct Buffers: Sendable, Hashable {
        /// The largest ACL data packet payload the controller accepts, in octets.
        public var aclPacketLength: Int
        /// How many ACL data packets the controller buffers.
        public var aclPacketCount: Int
        /// The largest ISO data packet payload (LE Read Buffer Size [v2] only; 0 without ISO buffers).
        public var isoPacketLength: Int
        /// How many ISO data packets the controller buffers (0 without ISO buffers).
        public var isoPacketCount: Int
        /// The command the sizes came from.
        public var source: BufferSource

        /// Creates a buffer record.
        public init(aclPacketLength: Int, aclPacketCount: Int, isoPacketLength: Int = 0, isoPacketCount: Int = 0,
                    source: BufferSource) {
            self.aclPacketLength = aclPacketLength
            self.aclPacketCount = aclPacketCount
            self.isoPacketLength = isoPacketLength
            self.isoPacketCount = isoPacketCount
            self.source = source
        }
    }

    /// The largest link-layer data packets the controller supports (LE Read Maximum Data Length). Core 5.4, Vol 4,
    /// Part E, 7.8.46.
    public struct DataLength: Sendable, Hashable {
        /// `Supported_Max_TX_Octets`.
        public var maxTxOctets: Int
        /// `Supported_Max_TX_Time`, in microseconds.
        public var maxTxTime: Int
        /// `Supported_Max_RX_Octets`.
        public var maxRxOctets: Int
        /// `Supported_Max_RX_Time`, in microseconds.
        public var maxRxTime: Int

        /// Creates a data length record.
        public init(maxTxOctets: Int, maxTxTime: Int, maxRxOctets: Int, maxRxTime: Int) {
            self.maxTxOctets = maxTxOctets
            self.maxTxTime = maxTxTime
            self.maxRxOctets = maxRxOctets
            self.maxRxTime = maxRxTime
        }
    }

    /// Read Local Version Information's answer; `nil` when the controller does not list the command or did not
    /// answer it.
    public var version: Version?
    /// The commands the controller lists (Read Local Supported Commands), or those assumed (``commandSource``).
    public var supportedCommands: HCISupportedCommands
    /// Where ``supportedCommands`` came from.
    public var commandSource: CommandSource
    /// The LMP features, page 0 (Read Local Supported Features; bit 38: LE Supported (Controller)).
    public var lmpFeatures: UInt64
    /// The LE features (LE Read Local Supported Features); empty when the command is not listed.
    public var leFeatures: LEFeatures
    /// The ACL buffers the host sends LE data into; `nil` before power-on.
    public var buffers: Buffers?
    /// LE Read Maximum Data Length's answer; `nil` when the command is not listed (no Data Length Extension: 27
    /// octets).
    public var maximumDataLength: DataLength?
    /// How many devices the Filter Accept List holds (LE Read Filter Accept List Size); `nil` when not listed.
    public var filterAcceptListSize: Int?
    /// How many devices the resolving list holds (LE Read Resolving List Size); `nil` when not listed.
    public var resolvingListSize: Int?
    /// The controller's public address; `nil` when it has none (Read BD_ADDR returned zero) or before power-on.
    public var publicAddress: BluetoothAddress?
    /// The most advertising (or scan response) data an advertising set holds (LE Read Maximum Advertising Data
    /// Length); `nil` when the controller does not do extended advertising.
    public var maximumAdvertisingDataLength: Int?
    /// How many advertising sets the controller holds (LE Read Number of Supported Advertising Sets); `nil` when it
    /// does not do extended advertising.
    public var advertisingSetCount: Int?

    /// The extended advertising commands the host drives a controller with when it lists them all: advertising sets
    /// (parameters, data, scan response, enable, clear, the set's random address), extended scanning and extended
    /// connection creation. Core 5.4, Vol 4, Part E, 7.8.52–7.8.66.
    public static let extendedAdvertisingCommands: [HCIOpcode] = [
        .leSetAdvertisingSetRandomAddress, .leSetExtendedAdvertisingParameters, .leSetExtendedAdvertisingData,
        .leSetExtendedScanResponseData, .leSetExtendedAdvertisingEnable, .leClearAdvertisingSets,
        .leSetExtendedScanParameters, .leSetExtendedScanEnable, .leExtendedCreateConnection,
    ]

    /// Whether the controller lists every command of ``extendedAdvertisingCommands`` (once they are known): the host
    /// then uses them rather than the legacy advertising, scanning and connection commands.
    public var supportsExtendedAdvertising: Bool {
        commandSource != .unknown && Self.extendedAdvertisingCommands.allSatisfy(allows)
    }

    /// Whether advertising and scanning on LE Coded is possible: the extended commands and LE feature bit 11.
    public var supportsCodedAdvertising: Bool { supportsExtendedAdvertising && leFeatures.contains(.leCodedPHY) }

    /// Capabilities before power-on: nothing known, nothing gated.
    public init() {
        version = nil
        supportedCommands = HCISupportedCommands()
        commandSource = .unknown
        lmpFeatures = 0
        leFeatures = []
        buffers = nil
        maximumDataLength = nil
        filterAcceptListSize = nil
        resolvingListSize = nil
        publicAddress = nil
        maximumAdvertisingDataLength = nil
        advertisingSetCount = nil
    }

    /// The PHYs the controller can use on connections: LE 1M always, LE 2M with LE feature bit 8, LE Coded with bit
    /// 11 (each also needs LE Set PHY to be reached).
    public var phys: LEPHYs {
        var result: LEPHYs = .le1M
        if leFeatures.contains(.le2MPHY) { result.insert(.le2M) }
        if leFeatures.contains(.leCodedPHY) { result.insert(.leCoded) }
        return result
    }

    /// Whether the host may send `opcode` to this controller: Reset and Read Local Supported Commands always; before
    /// the supported commands are known, everything; after, only what they list. Opcodes this library has no
    /// position for in the Supported_Commands table (vendor commands) are not judged.
    public func allows(_ opcode: HCIOpcode) -> Bool {
        if opcode == .reset || opcode == .readLocalSupportedCommands || commandSource == .unknown { return true }
        guard let position = HCISupportedCommands.positions[opcode] else { return true }
        return supportedCommands.contains(octet: position.octet, bit: position.bit)
    }

    /// Whether the controller supports `capability`.
    public func supports(_ capability: ControllerCapability) -> Bool { missing(capability) == nil }

    /// Why the controller does not support `capability` ("LE Set Data Length is not in its supported commands"), or
    /// `nil` when it does.
    public func missing(_ capability: ControllerCapability) -> String? {
        func command(_ opcode: HCIOpcode) -> String? {
            allows(opcode) ? nil : "\(Self.commandName(opcode)) is not in its supported commands"
        }
        func feature(_ bit: LEFeatures, _ number: Int) -> String? {
            leFeatures.contains(bit) || commandSource == .unknown
                ? nil : "bit \(number) (\(LEFeatures.bitNames[number] ?? "")) of its LE features is clear"
        }
        switch capability {
        case .dataLengthExtension: return command(.leSetDataLength)
        case .phyUpdate: return command(.leSetPHY)
        case .twoMegabitPHY: return command(.leSetPHY) ?? feature(.le2MPHY, 8)
        case .codedPHY: return command(.leSetPHY) ?? feature(.leCodedPHY, 11)
        case .extendedAdvertising:
            return Self.extendedAdvertisingCommands.lazy.compactMap(command).first
        case .advertisingSets(let count):
            if let missing = Self.extendedAdvertisingCommands.lazy.compactMap(command).first { return missing }
            guard let available = advertisingSetCount, count > available else { return nil }
            return "it holds \(available) advertising set\(available == 1 ? "" : "s")"
        case .command(let opcode): return command(opcode)
        }
    }

    /// The error an API call that needs `capability` throws when the controller lacks it.
    public func unsupported(_ capability: ControllerCapability, file: String = #fileID, line: Int = #line) -> HostError {
        HostError(.unsupportedByController(capability),
                  "the controller does not support \(capability) (\(missing(capability) ?? "it says it does"))", file: file, line: line)
    }

    /// A command's name from the Supported_Commands table, or its opcode.
    static func commandName(_ opcode: HCIOpcode) -> String { HCISupportedCommands.name(of: opcode) ?? "command \(opcode)" }

    /// What the host assumes of a controller that does not answer Read Local Supported Commands: the commands Core
    /// 4.0 makes mandatory for an LE controller (Vol 2, Part E, 3.19) that this host uses. Nothing from later versions
    /// (Data Length Extension, LE Set PHY, LE Read Buffer Size [v2], privacy lists) is assumed, so the host does not
    /// try them.
    public static let bluetooth40Commands: HCISupportedCommands = {
        var mask = HCISupportedCommands()
        let baseline: [HCIOpcode] = [
            .disconnect, .readRemoteVersionInformation, .setEventMask, .reset, .readLocalVersionInformation,
            .readLocalSupportedFeatures, .readBufferSize, .readBDADDR, .readRSSI, .leSetEventMask, .leReadBufferSize,
            .leReadLocalSupportedFeatures, .leSetRandomAddress, .leSetAdvertisingParameters,
            .leReadAdvertisingPhysicalChannelTxPower, .leSetAdvertisingData, .leSetScanResponseData,
            .leSetAdvertisingEnable, .leSetScanParameters, .leSetScanEnable, .leCreateConnection,
            .leCreateConnectionCancel, .leReadFilterAcceptListSize, .leClearFilterAcceptList,
            .leAddDeviceToFilterAcceptList, .leRemoveDeviceFromFilterAcceptList, .leConnectionUpdate,
            .leReadRemoteFeatures, .leEncrypt, .leRand, .leEnableEncryption, .leLongTermKeyRequestReply,
            .leLongTermKeyRequestNegativeReply, .leReadSupportedStates,
        ]
        for opcode in baseline { mask.insert(opcode) }
        return mask
    }()
}

/// Something an API call may need of the controller, named in ``HostErrorCode/unsupportedByController(_:)``.
public enum ControllerCapability: Sendable, Hashable, CustomStringConvertible {
    /// LE Data Length Extension: LE Set Data Length (Core 5.4, Vol 4, Part E, 7.8.33).
    case dataLengthExtension
    /// The LE PHY Update procedure: LE Set PHY (Core 5.4, Vol 4, Part E, 7.8.49).
    case phyUpdate
    /// LE 2M PHY: LE Set PHY and LE feature bit 8.
    case twoMegabitPHY
    /// LE Coded PHY: LE Set PHY and LE feature bit 11.
    case codedPHY
    /// Extended advertising, scanning and connection creation: the commands of
    /// ``ControllerCapabilities/extendedAdvertisingCommands`` (Core 5.4, Vol 4, Part E, 7.8.52–7.8.66).
    case extendedAdvertising
    /// This many advertising sets at once (LE Read Number of Supported Advertising Sets).
    case advertisingSets(Int)
    /// One HCI command, for an API call that sends it as it is (Read RSSI, …).
    case command(HCIOpcode)

    public var description: String {
        switch self {
        case .extendedAdvertising: "LE extended advertising"
        case .advertisingSets(let count): "\(count) advertising sets"
        case .dataLengthExtension: "LE Data Length Extension"
        case .phyUpdate: "the LE PHY Update procedure"
        case .twoMegabitPHY: "LE 2M PHY"
        case .codedPHY: "LE Coded PHY"
        case .command(let opcode): ControllerCapabilities.commandName(opcode)
        }
    }
}
