// Interim minimal address types so the HCI codecs build; replaced by Address/BluetoothAddress.swift when it lands.
public struct BluetoothAddress: WireCodable, Hashable, Sendable {
    public var bytes: [UInt8]
    public static let zero = BluetoothAddress(raw: [0,0,0,0,0,0])
    init(raw: [UInt8]) { self.bytes = raw }
    public init(from reader: inout ByteReader) throws(WireError) { bytes = try reader.readBytes(6) }
    public func encode(into writer: inout ByteWriter) { writer.write(bytes) }
}
public struct LEAddressType: RawRepresentable, Hashable, Sendable {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    public static let `public` = LEAddressType(rawValue: 0)
    public static let random = LEAddressType(rawValue: 1)
}
