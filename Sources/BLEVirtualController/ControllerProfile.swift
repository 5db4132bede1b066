import BLEWire

/// What a virtual controller says it is and can do: its version, the commands it leaves out and its LE features.
///
/// The default, ``full``, implements every command the virtual controller knows and lists exactly those. A reduced
/// profile behaves as a controller without them would: an omitted command is neither listed in Read Local Supported
/// Commands nor answered (Unknown HCI Command, 0x01), and the LE features (reported to its host and to peers) say
/// what its link layer does, so a peer's PHY update or data length request with it stays within them.
public struct ControllerProfile: Sendable, Hashable {
    /// `HCI_Version` and `LMP_Version` (Assigned Numbers; 0x0D = Core 5.4).
    public var version: UInt8
    /// `Company_Identifier` reported by Read Local Version Information (0xFFFF: reserved for testing).
    public var companyIdentifier: UInt16
    /// Commands this controller neither lists nor answers. Reset and Read Local Supported Commands cannot be left out.
    public var omittedCommands: Set<HCIOpcode>
    /// The LE features its link layer has. Only features the virtual controller implements mean anything:
    /// encryption, Data Packet Length Extension, LE 2M PHY, LE Coded PHY, LE Extended Advertising.
    public var leFeatures: LEFeatures

    /// Creates a profile.
    public init(version: UInt8 = 0x0D, companyIdentifier: UInt16 = 0xFFFF, omittedCommands: Set<HCIOpcode> = [],
                leFeatures: LEFeatures = ControllerProfile.implementedFeatures) {
        self.version = version
        self.companyIdentifier = companyIdentifier
        self.omittedCommands = omittedCommands.subtracting([.reset, .readLocalSupportedCommands])
        self.leFeatures = leFeatures.intersection(Self.implementedFeatures)
    }

    /// The LE features the virtual controller implements.
    public static let implementedFeatures: LEFeatures = [.encryption, .dataPacketLengthExtension, .le2MPHY, .leCodedPHY,
                                                         .extendedAdvertising]

    /// Everything the virtual controller implements, as a Core 5.4 controller (the default).
    public static let full = ControllerProfile()

    /// A Core 4.1 controller: LE encryption only; no Data Length Extension (LE Set Data Length and the data length
    /// reads), no LE Set PHY / Read PHY / Set Default PHY, no LE Read Buffer Size [v2], no extended advertising,
    /// scanning or connection creation (legacy advertising commands only).
    public static let bluetooth41 = ControllerProfile(
        version: 0x07,
        omittedCommands: Set<HCIOpcode>([.leSetDataLength, .leReadSuggestedDefaultDataLength, .leWriteSuggestedDefaultDataLength,
                                         .leReadMaximumDataLength, .leReadPHY, .leSetDefaultPHY, .leSetPHY, .leReadBufferSizeV2])
            .union(World.extendedAdvertisingCommands),
        leFeatures: [.encryption])

    /// The PHYs its link layer uses: LE 1M, and LE 2M and LE Coded when its features have them.
    var phys: LEPHYs {
        var result: LEPHYs = .le1M
        if leFeatures.contains(.le2MPHY) { result.insert(.le2M) }
        if leFeatures.contains(.leCodedPHY) { result.insert(.leCoded) }
        return result
    }
}
