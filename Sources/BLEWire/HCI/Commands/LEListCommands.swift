// The sizes of the controller's device lists: the Filter Accept List and the resolving list.

/// Return parameters made of a status and one list size (an octet).
public struct HCIListSizeReturnParameters: WireCodable, Hashable {
    /// The status.
    public var status: HCIStatus
    /// How many entries the list holds at most.
    public var size: UInt8
    /// Creates return parameters carrying `size`.
    public init(status: HCIStatus = .success, size: UInt8) {
        self.status = status
        self.size = size
    }
    public init(from reader: inout ByteReader) throws(WireError) {
        status = HCIStatus(rawValue: try reader.readUInt8("status"))
        size = try reader.readUInt8("list size")
    }
    public func encode(into writer: inout ByteWriter) {
        writer.write(status.rawValue)
        writer.write(size)
    }
}

/// LE Read Filter Accept List Size. Core 5.4, Vol 4, Part E, 7.8.14.
public struct HCILEReadFilterAcceptListSize: HCIParameterlessCommand, Hashable {
    /// The command's opcode.
    public static let opcode = HCIOpcode.leReadFilterAcceptListSize
    /// Creates the command (it has no parameters).
    public init() {}
    /// Status and `Filter_Accept_List_Size`.
    public typealias ReturnParameters = HCIListSizeReturnParameters
}

/// LE Read Resolving List Size. Core 5.4, Vol 4, Part E, 7.8.41.
public struct HCILEReadResolvingListSize: HCIParameterlessCommand, Hashable {
    /// The command's opcode.
    public static let opcode = HCIOpcode.leReadResolvingListSize
    /// Creates the command (it has no parameters).
    public init() {}
    /// Status and `Resolving_List_Size`.
    public typealias ReturnParameters = HCIListSizeReturnParameters
}
