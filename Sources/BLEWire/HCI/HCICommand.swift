/// How the controller acknowledges a command. Core 5.4, Vol 4, Part E, 4.4.
public enum HCICommandCompletion: Sendable {
    /// The controller answers with Command Complete carrying the return parameters.
    case commandComplete
    /// The controller answers with Command Status; a later event carries the outcome.
    case commandStatus
}

/// A typed HCI command: its parameters are the value's ``WireCodable`` form.
///
/// One generic send (`send<C: HCICommand>(_:) async throws -> C.ReturnParameters`) serves every command.
public protocol HCICommand: WireCodable {
    /// The return parameters carried by Command Complete (status first).
    associatedtype ReturnParameters: WireCodable = HCIStatusReturnParameters
    /// The command's opcode.
    static var opcode: HCIOpcode { get }
    /// How the controller acknowledges the command.
    static var completion: HCICommandCompletion { get }
}

extension HCICommand {
    /// By default a command is acknowledged with Command Complete.
    public static var completion: HCICommandCompletion { .commandComplete }

    /// The command as a packet.
    public var packet: HCICommandPacket { HCICommandPacket(opcode: Self.opcode, parameters: encoded) }

    /// Decodes the command from a packet whose opcode must be ``opcode``; the parameters must be exact.
    public init(packet: HCICommandPacket) throws(WireError) {
        guard packet.opcode == Self.opcode else {
            throw WireError(.invalidValue, "opcode \(packet.opcode) is not \(Self.self) (\(Self.opcode))")
        }
        try self.init(bytes: packet.parameters)
    }
}

/// Return parameters that are only a status byte.
public struct HCIStatusReturnParameters: WireCodable, Hashable {
    /// The status.
    public var status: HCIStatus
    /// Creates return parameters holding only `status`.
    public init(status: HCIStatus = .success) { self.status = status }
    public init(from reader: inout ByteReader) throws(WireError) {
        status = HCIStatus(rawValue: try reader.readUInt8("status"))
    }
    public func encode(into writer: inout ByteWriter) { writer.write(status.rawValue) }
}

/// A command with no parameters.
public protocol HCIParameterlessCommand: HCICommand {
    init()
}

extension HCIParameterlessCommand {
    public init(from reader: inout ByteReader) throws(WireError) { self.init() }
    public func encode(into writer: inout ByteWriter) {}
}
