/// The LE feature bits a link layer supports (the `LE_Features` of LE Read Local Supported Features and of LE Read
/// Remote Features Complete). Core 5.4, Vol 6, Part B, 4.6.
///
/// Open: bits without a constant here still round-trip, and ``names`` gives them as "bit N".
public struct LEFeatures: OptionSet, Hashable, Sendable {
    public var rawValue: UInt64
    public init(rawValue: UInt64) { self.rawValue = rawValue }
    /// LE Encryption (bit 0).
    public static let encryption = LEFeatures(rawValue: 1 << 0)
    /// Connection Parameters Request procedure (bit 1).
    public static let connectionParametersRequest = LEFeatures(rawValue: 1 << 1)
    /// Extended Reject Indication (bit 2).
    public static let extendedRejectIndication = LEFeatures(rawValue: 1 << 2)
    /// Peripheral-initiated Features Exchange (bit 3).
    public static let peripheralInitiatedFeaturesExchange = LEFeatures(rawValue: 1 << 3)
    /// LE Ping (bit 4).
    public static let ping = LEFeatures(rawValue: 1 << 4)
    /// LE Data Packet Length Extension (bit 5).
    public static let dataPacketLengthExtension = LEFeatures(rawValue: 1 << 5)
    /// LL Privacy (bit 6).
    public static let llPrivacy = LEFeatures(rawValue: 1 << 6)
    /// Extended Scanner Filter Policies (bit 7).
    public static let extendedScanningFilterPolicies = LEFeatures(rawValue: 1 << 7)
    /// LE 2M PHY (bit 8).
    public static let le2MPHY = LEFeatures(rawValue: 1 << 8)
    /// Stable Modulation Index - Transmitter (bit 9).
    public static let stableModulationIndexTransmitter = LEFeatures(rawValue: 1 << 9)
    /// Stable Modulation Index - Receiver (bit 10).
    public static let stableModulationIndexReceiver = LEFeatures(rawValue: 1 << 10)
    /// LE Coded PHY (bit 11).
    public static let leCodedPHY = LEFeatures(rawValue: 1 << 11)
    /// LE Extended Advertising (bit 12).
    public static let extendedAdvertising = LEFeatures(rawValue: 1 << 12)
    /// LE Periodic Advertising (bit 13).
    public static let periodicAdvertising = LEFeatures(rawValue: 1 << 13)
    /// Channel Selection Algorithm #2 (bit 14).
    public static let channelSelectionAlgorithm2 = LEFeatures(rawValue: 1 << 14)
    /// LE Power Class 1 (bit 15).
    public static let powerClass1 = LEFeatures(rawValue: 1 << 15)
    /// Minimum Number of Used Channels procedure (bit 16).
    public static let minimumNumberOfUsedChannels = LEFeatures(rawValue: 1 << 16)

    /// The specification's name of each feature bit, by bit number; `nil` for bits it leaves reserved (or that this
    /// table does not know yet). Core 5.4, Vol 6, Part B, 4.6 (bits 46 and 47: Core 6.0).
    public static let bitNames: [Int: String] = [
        0: "LE Encryption",
        1: "Connection Parameters Request procedure",
        2: "Extended Reject Indication",
        3: "Peripheral-initiated Features Exchange",
        4: "LE Ping",
        5: "LE Data Packet Length Extension",
        6: "LL Privacy",
        7: "Extended Scanner Filter Policies",
        8: "LE 2M PHY",
        9: "Stable Modulation Index - Transmitter",
        10: "Stable Modulation Index - Receiver",
        11: "LE Coded PHY",
        12: "LE Extended Advertising",
        13: "LE Periodic Advertising",
        14: "Channel Selection Algorithm #2",
        15: "LE Power Class 1",
        16: "Minimum Number of Used Channels procedure",
        17: "Connection CTE Request",
        18: "Connection CTE Response",
        19: "Connectionless CTE Transmitter",
        20: "Connectionless CTE Receiver",
        21: "Antenna Switching During CTE Transmission (AoD)",
        22: "Antenna Switching During CTE Reception (AoA)",
        23: "Receiving Constant Tone Extensions",
        24: "Periodic Advertising Sync Transfer - Sender",
        25: "Periodic Advertising Sync Transfer - Recipient",
        26: "Sleep Clock Accuracy Updates",
        27: "Remote Public Key Validation",
        28: "Connected Isochronous Stream - Central",
        29: "Connected Isochronous Stream - Peripheral",
        30: "Isochronous Broadcaster",
        31: "Synchronized Receiver",
        32: "Connected Isochronous Stream (Host Support)",
        33: "LE Power Control Request",
        34: "LE Power Change Indication",
        35: "LE Path Loss Monitoring",
        36: "Periodic Advertising ADI support",
        37: "Connection Subrating",
        38: "Connection Subrating (Host Support)",
        39: "Channel Classification",
        40: "Advertising Coding Selection",
        41: "Advertising Coding Selection (Host Support)",
        43: "Periodic Advertising with Responses - Advertiser",
        44: "Periodic Advertising with Responses - Scanner",
        46: "Channel Sounding",
        47: "Channel Sounding (Host Support)",
    ]

    /// The set bits, lowest first.
    public var bits: [Int] { (0..<64).filter { rawValue & (1 << UInt64($0)) != 0 } }

    /// The names of the set bits, lowest first; a bit without a name as "bit N".
    public var names: [String] { bits.map { Self.bitNames[$0] ?? "bit \($0)" } }
}
