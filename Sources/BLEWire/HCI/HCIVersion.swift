/// A Bluetooth Core Specification version as the HCI and LMP carry it (`HCI_Version`, `LMP_Version`; Assigned
/// Numbers 2.1, Core Specification versions). Open: later versions decode and print as their number.
public struct HCIVersion: RawRepresentable, Hashable, Sendable, Comparable, CustomStringConvertible {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// Core 4.0 (0x06), the first with LE.
    public static let v4_0 = HCIVersion(rawValue: 0x06)
    /// Core 4.1 (0x07).
    public static let v4_1 = HCIVersion(rawValue: 0x07)
    /// Core 4.2 (0x08).
    public static let v4_2 = HCIVersion(rawValue: 0x08)
    /// Core 5.0 (0x09).
    public static let v5_0 = HCIVersion(rawValue: 0x09)
    /// Core 5.1 (0x0A).
    public static let v5_1 = HCIVersion(rawValue: 0x0A)
    /// Core 5.2 (0x0B).
    public static let v5_2 = HCIVersion(rawValue: 0x0B)
    /// Core 5.3 (0x0C).
    public static let v5_3 = HCIVersion(rawValue: 0x0C)
    /// Core 5.4 (0x0D).
    public static let v5_4 = HCIVersion(rawValue: 0x0D)
    /// Core 6.0 (0x0E).
    public static let v6_0 = HCIVersion(rawValue: 0x0E)

    private static let names = ["1.0b", "1.1", "1.2", "2.0 + EDR", "2.1 + EDR", "3.0 + HS", "4.0", "4.1", "4.2", "5.0", "5.1",
                                "5.2", "5.3", "5.4", "6.0"]

    /// The version's name ("5.3"), or `nil` for a number this table does not know.
    public var name: String? { Int(rawValue) < Self.names.count ? Self.names[Int(rawValue)] : nil }

    /// The name, or "0xNN" for an unknown number.
    public var description: String { name ?? "0x" + [rawValue].hexString().uppercased() }

    public static func < (lhs: HCIVersion, rhs: HCIVersion) -> Bool { lhs.rawValue < rhs.rawValue }
}
