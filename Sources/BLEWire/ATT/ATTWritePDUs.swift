// Write, queued write, server-initiated and multiple-variable ATT PDUs. Core 5.4, Vol 3, Part F, 3.4.5–3.4.7.

/// A handle followed by a value: the layout of several PDUs.
public protocol ATTHandleValuePDU: ATTPDUParameters, Hashable {
    var handle: AttributeHandle { get }
    var value: [UInt8] { get }
    init(handle: AttributeHandle, value: [UInt8])
}

extension ATTHandleValuePDU {
    public init(from r: inout ByteReader) throws(WireError) {
        let handle = try r.readAttributeHandle("Attribute Handle")
        self.init(handle: handle, value: r.readRemaining())
    }
    public func encode(into w: inout ByteWriter) {
        w.write(handle)
        w.write(value)
    }
}

/// Write Request. Core 5.4, Vol 3, Part F, 3.4.5.1.
public struct ATTWriteRequest: ATTHandleValuePDU {
    /// The PDU's opcode.
    public static let opcode = ATTOpcode.writeRequest
    /// `Attribute Handle`.
    public var handle: AttributeHandle
    /// Value.
    public var value: [UInt8]
    /// Creates a Write Request that writes `value` to the attribute at `handle`.
    public init(handle: AttributeHandle, value: [UInt8]) {
        self.handle = handle
        self.value = value
    }
}

/// Write Command. Core 5.4, Vol 3, Part F, 3.4.5.3.
public struct ATTWriteCommand: ATTHandleValuePDU {
    /// The PDU's opcode.
    public static let opcode = ATTOpcode.writeCommand
    /// `Attribute Handle`.
    public var handle: AttributeHandle
    /// Value.
    public var value: [UInt8]
    /// Creates a Write Command (no response) that writes `value` to the attribute at `handle`.
    public init(handle: AttributeHandle, value: [UInt8]) {
        self.handle = handle
        self.value = value
    }
}

/// Handle Value Notification. Core 5.4, Vol 3, Part F, 3.4.7.1.
public struct ATTHandleValueNotification: ATTHandleValuePDU {
    /// The PDU's opcode.
    public static let opcode = ATTOpcode.handleValueNotification
    /// `Attribute Handle`.
    public var handle: AttributeHandle
    /// Value.
    public var value: [UInt8]
    /// Creates a Handle Value Notification carrying `value` of the attribute at `handle`.
    public init(handle: AttributeHandle, value: [UInt8]) {
        self.handle = handle
        self.value = value
    }
}

/// Handle Value Indication. Core 5.4, Vol 3, Part F, 3.4.7.2.
public struct ATTHandleValueIndication: ATTHandleValuePDU {
    /// The PDU's opcode.
    public static let opcode = ATTOpcode.handleValueIndication
    /// `Attribute Handle`.
    public var handle: AttributeHandle
    /// Value.
    public var value: [UInt8]
    /// Creates a Handle Value Indication carrying `value` of the attribute at `handle`; the client confirms it.
    public init(handle: AttributeHandle, value: [UInt8]) {
        self.handle = handle
        self.value = value
    }
}

/// A PDU without parameters.
public protocol ATTEmptyPDU: ATTPDUParameters, Hashable {
    init()
}

extension ATTEmptyPDU {
    public init(from r: inout ByteReader) throws(WireError) {
        self.init()
        try r.expectEnd("\(Self.self)")
    }
    public func encode(into w: inout ByteWriter) {}
}

/// Write Response. Core 5.4, Vol 3, Part F, 3.4.5.2.
public struct ATTWriteResponse: ATTEmptyPDU {
    /// The PDU's opcode.
    public static let opcode = ATTOpcode.writeResponse
    /// Creates the command (it has no parameters).
    public init() {}
}

/// Execute Write Response. Core 5.4, Vol 3, Part F, 3.4.6.4.
public struct ATTExecuteWriteResponse: ATTEmptyPDU {
    /// The PDU's opcode.
    public static let opcode = ATTOpcode.executeWriteResponse
    /// Creates the command (it has no parameters).
    public init() {}
}

/// Handle Value Confirmation. Core 5.4, Vol 3, Part F, 3.4.7.3.
public struct ATTHandleValueConfirmation: ATTEmptyPDU {
    /// The PDU's opcode.
    public static let opcode = ATTOpcode.handleValueConfirmation
    /// Creates the command (it has no parameters).
    public init() {}
}

/// Signed Write Command. Core 5.4, Vol 3, Part F, 3.4.5.4.
public struct ATTSignedWriteCommand: ATTPDUParameters, Hashable {
    /// The PDU's opcode.
    public static let opcode = ATTOpcode.signedWriteCommand
    /// `Attribute Handle`.
    public var handle: AttributeHandle
    /// Value.
    public var value: [UInt8]
    /// Sign counter (4 bytes) and MAC (8 bytes).
    public var signature: [UInt8]
    /// Creates a Signed Write Command that writes `value` to the attribute at `handle`, with its 12-octet signature
    /// (sign counter and MAC).
    public init(handle: AttributeHandle, value: [UInt8], signature: [UInt8]) {
        self.handle = handle
        self.value = value
        self.signature = signature
    }
    public init(from r: inout ByteReader) throws(WireError) {
        handle = try r.readAttributeHandle("Attribute Handle")
        guard r.remainingCount >= 12 else { throw WireError(.truncated, "Signed Write Command without its 12-byte signature") }
        value = try r.readBytes(r.remainingCount - 12, "Attribute Value")
        signature = try r.readBytes(12, "Authentication Signature")
    }
    public func encode(into w: inout ByteWriter) {
        w.write(handle)
        w.write(value)
        w.write(Array((signature + [UInt8](repeating: 0, count: 12)).prefix(12)))
    }
}

/// The layout of Prepare Write Request and Response.
public protocol ATTPrepareWritePDU: ATTPDUParameters, Hashable {
    var handle: AttributeHandle { get }
    var offset: UInt16 { get }
    var value: [UInt8] { get }
    init(handle: AttributeHandle, offset: UInt16, value: [UInt8])
}

extension ATTPrepareWritePDU {
    public init(from r: inout ByteReader) throws(WireError) {
        let handle = try r.readAttributeHandle("Attribute Handle")
        let offset = try r.readUInt16("Value Offset")
        self.init(handle: handle, offset: offset, value: r.readRemaining())
    }
    public func encode(into w: inout ByteWriter) {
        w.write(handle)
        w.write(offset)
        w.write(value)
    }
}

/// Prepare Write Request. Core 5.4, Vol 3, Part F, 3.4.6.1.
public struct ATTPrepareWriteRequest: ATTPrepareWritePDU {
    /// The PDU's opcode.
    public static let opcode = ATTOpcode.prepareWriteRequest
    /// `Attribute Handle`.
    public var handle: AttributeHandle
    /// `Value Offset`.
    public var offset: UInt16
    /// Value.
    public var value: [UInt8]
    /// Creates a Prepare Write Request that queues `value` for the attribute at `handle`, to be written at `offset`.
    public init(handle: AttributeHandle, offset: UInt16, value: [UInt8]) {
        self.handle = handle
        self.offset = offset
        self.value = value
    }
}

/// Prepare Write Response. Core 5.4, Vol 3, Part F, 3.4.6.2.
public struct ATTPrepareWriteResponse: ATTPrepareWritePDU {
    /// The PDU's opcode.
    public static let opcode = ATTOpcode.prepareWriteResponse
    /// `Attribute Handle`.
    public var handle: AttributeHandle
    /// `Value Offset`.
    public var offset: UInt16
    /// Value.
    public var value: [UInt8]
    /// Creates a Prepare Write Response echoing the handle, offset and value that were queued.
    public init(handle: AttributeHandle, offset: UInt16, value: [UInt8]) {
        self.handle = handle
        self.offset = offset
        self.value = value
    }
}

/// Execute Write Request. Core 5.4, Vol 3, Part F, 3.4.6.3.
public struct ATTExecuteWriteRequest: ATTPDUParameters, Hashable {
    /// The PDU's opcode.
    public static let opcode = ATTOpcode.executeWriteRequest
    /// `true` (0x01): write all prepared values; `false` (0x00): cancel them.
    public var commit: Bool
    /// Creates an Execute Write Request that writes the queued values (`commit` true) or discards them (`commit`
    /// false).
    public init(commit: Bool) { self.commit = commit }
    public init(from r: inout ByteReader) throws(WireError) {
        let flags = try r.readUInt8("Flags")
        guard flags <= 1 else { throw WireError(.invalidValue, "Execute Write flags 0x\([flags].hexString())") }
        commit = flags == 1
        try r.expectEnd("Execute Write Request")
    }
    public func encode(into w: inout ByteWriter) { w.write(UInt8(commit ? 1 : 0)) }
}

/// Read Multiple Variable Request. Core 5.4, Vol 3, Part F, 3.4.4.11.
public struct ATTReadMultipleVariableRequest: ATTPDUParameters, Hashable {
    /// The PDU's opcode.
    public static let opcode = ATTOpcode.readMultipleVariableRequest
    /// Handles.
    public var handles: [AttributeHandle]
    /// Creates a Read Multiple Variable Request for the values of the attributes at `handles`.
    public init(handles: [AttributeHandle]) { self.handles = handles }
    public init(from r: inout ByteReader) throws(WireError) { handles = try readHandleList(&r, "Read Multiple Variable Request") }
    public func encode(into w: inout ByteWriter) { for h in handles { w.write(h) } }
}

/// Read Multiple Variable Response. Core 5.4, Vol 3, Part F, 3.4.4.12.
///
/// Each value is preceded by its full length; the last value may be cut short by the MTU, so its bytes can be
/// fewer than its length says.
public struct ATTReadMultipleVariableResponse: ATTPDUParameters, Hashable {
    /// The PDU's opcode.
    public static let opcode = ATTOpcode.readMultipleVariableResponse
    /// One value and its full length.
    public struct Entry: Hashable, Sendable {
        /// `Value Length`.
        public var length: UInt16
        /// Value.
        public var value: [UInt8]
        /// Creates an entry holding `value` and the full length of the attribute's value.
        public init(length: UInt16, value: [UInt8]) {
            self.length = length
            self.value = value
        }
        /// An untruncated value.
        public init(_ value: [UInt8]) { self.init(length: UInt16(truncatingIfNeeded: value.count), value: value) }
    }
    /// Entries.
    public var entries: [Entry]
    /// Creates a Read Multiple Variable Response listing `entries`, each value preceded by its full length.
    public init(entries: [Entry]) { self.entries = entries }
    public init(from r: inout ByteReader) throws(WireError) {
        var list: [Entry] = []
        while !r.isAtEnd {
            let length = Int(try r.readUInt16("Value Length"))
            let available = min(length, r.remainingCount)
            let value = try r.readBytes(available, "Attribute Value")
            // Only the last value may be truncated.
            guard available == length || r.isAtEnd else { throw WireError(.lengthMismatch, "truncated value before the last") }
            list.append(Entry(length: UInt16(length), value: value))
        }
        entries = list
    }
    public func encode(into w: inout ByteWriter) {
        for e in entries {
            w.write(e.length)
            w.write(e.value)
        }
    }
}

/// Multiple Handle Value Notification. Core 5.4, Vol 3, Part F, 3.4.7.4.
public struct ATTMultipleHandleValueNotification: ATTPDUParameters, Hashable {
    /// The PDU's opcode.
    public static let opcode = ATTOpcode.multipleHandleValueNotification
    /// Entries.
    public var entries: [ATTReadByTypeResponse.Entry]
    /// Creates a Multiple Handle Value Notification carrying a handle and a value for each of `entries`.
    public init(entries: [ATTReadByTypeResponse.Entry]) { self.entries = entries }
    public init(from r: inout ByteReader) throws(WireError) {
        var list: [ATTReadByTypeResponse.Entry] = []
        guard !r.isAtEnd else { throw WireError(.truncated, "Multiple Handle Value Notification without values") }
        while !r.isAtEnd {
            let handle = try r.readAttributeHandle("Attribute Handle")
            let length = Int(try r.readUInt16("Value Length"))
            list.append(.init(handle: handle, value: try r.readBytes(length, "Attribute Value")))
        }
        entries = list
    }
    public func encode(into w: inout ByteWriter) {
        for e in entries {
            w.write(e.handle)
            w.write(UInt16(truncatingIfNeeded: e.value.count))
            w.write(e.value)
        }
    }
}
