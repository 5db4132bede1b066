// One struct per ATT PDU: WireCodable parameters (everything after the opcode). Core 5.4, Vol 3, Part F, 3.4.

/// Parameters of an ATT PDU.
public protocol ATTPDUParameters: WireCodable {
    /// The PDU's opcode.
    static var opcode: ATTOpcode { get }
}

extension ATTPDUParameters {
    /// The whole PDU: opcode and parameters.
    public var pduBytes: [UInt8] { [Self.opcode.rawValue] + encoded }
}

/// Error Response. Core 5.4, Vol 3, Part F, 3.4.1.1.
public struct ATTErrorResponse: ATTPDUParameters, Hashable {
    /// The PDU's opcode.
    public static let opcode = ATTOpcode.errorResponse
    /// `Request Opcode In Error`.
    public var requestOpcode: ATTOpcode
    /// `Attribute Handle In Error`.
    public var handle: AttributeHandle
    /// `Error Code`.
    public var error: ATTErrorCode
    /// Creates an Error Response to the request `requestOpcode` about the attribute at `handle`, with the reason
    /// `error`.
    public init(requestOpcode: ATTOpcode, handle: AttributeHandle, error: ATTErrorCode) {
        self.requestOpcode = requestOpcode
        self.handle = handle
        self.error = error
    }
    public init(from r: inout ByteReader) throws(WireError) {
        requestOpcode = ATTOpcode(rawValue: try r.readUInt8("Request Opcode In Error"))
        handle = try r.readAttributeHandle("Attribute Handle In Error")
        error = ATTErrorCode(rawValue: try r.readUInt8("Error Code"))
        try r.expectEnd("Error Response")
    }
    public func encode(into w: inout ByteWriter) {
        w.write(requestOpcode.rawValue)
        w.write(handle)
        w.write(error.rawValue)
    }
}

/// Exchange MTU Request. Core 5.4, Vol 3, Part F, 3.4.2.1.
public struct ATTExchangeMTURequest: ATTPDUParameters, Hashable {
    /// The PDU's opcode.
    public static let opcode = ATTOpcode.exchangeMTURequest
    /// `Client Rx MTU`.
    public var mtu: UInt16
    /// Creates an Exchange MTU Request announcing the client's receive MTU `mtu`.
    public init(mtu: UInt16) { self.mtu = mtu }
    public init(from r: inout ByteReader) throws(WireError) {
        mtu = try r.readUInt16("Client Rx MTU")
        try r.expectEnd("Exchange MTU Request")
    }
    public func encode(into w: inout ByteWriter) { w.write(mtu) }
}

/// Exchange MTU Response. Core 5.4, Vol 3, Part F, 3.4.2.2.
public struct ATTExchangeMTUResponse: ATTPDUParameters, Hashable {
    /// The PDU's opcode.
    public static let opcode = ATTOpcode.exchangeMTUResponse
    /// `Server Rx MTU`.
    public var mtu: UInt16
    /// Creates an Exchange MTU Response announcing the server's receive MTU `mtu`.
    public init(mtu: UInt16) { self.mtu = mtu }
    public init(from r: inout ByteReader) throws(WireError) {
        mtu = try r.readUInt16("Server Rx MTU")
        try r.expectEnd("Exchange MTU Response")
    }
    public func encode(into w: inout ByteWriter) { w.write(mtu) }
}

/// A handle range shared by several requests.
public struct ATTHandleRange: Hashable, Sendable {
    /// `Starting Handle`.
    public var start: AttributeHandle
    /// `Ending Handle`.
    public var end: AttributeHandle
    /// Creates the handle range from `start` through `end`, both included.
    public init(start: AttributeHandle, end: AttributeHandle) {
        self.start = start
        self.end = end
    }
    /// Core 5.4, Vol 3, Part F, 3.4.3.1: handle 0 or start > end is invalid.
    public var isValid: Bool { start != 0 && start <= end }
    init(from r: inout ByteReader) throws(WireError) {
        start = try r.readAttributeHandle("Starting Handle")
        end = try r.readAttributeHandle("Ending Handle")
    }
    func encode(into w: inout ByteWriter) {
        w.write(start)
        w.write(end)
    }
}

/// Find Information Request. Core 5.4, Vol 3, Part F, 3.4.3.1.
public struct ATTFindInformationRequest: ATTPDUParameters, Hashable {
    /// The PDU's opcode.
    public static let opcode = ATTOpcode.findInformationRequest
    /// Range.
    public var range: ATTHandleRange
    /// Creates a Find Information Request for the attributes in `range`.
    public init(range: ATTHandleRange) { self.range = range }
    public init(from r: inout ByteReader) throws(WireError) {
        range = try ATTHandleRange(from: &r)
        try r.expectEnd("Find Information Request")
    }
    public func encode(into w: inout ByteWriter) { range.encode(into: &w) }
}

/// Find Information Response. Core 5.4, Vol 3, Part F, 3.4.3.2.
public struct ATTFindInformationResponse: ATTPDUParameters, Hashable {
    /// The PDU's opcode.
    public static let opcode = ATTOpcode.findInformationResponse
    /// A handle and its attribute type.
    public struct Entry: Hashable, Sendable {
        /// `Handle`: the handle of the attribute.
        public var handle: AttributeHandle
        /// `Attribute Type`.
        public var type: BluetoothUUID
        /// Creates an entry naming the attribute at `handle` and its type.
        public init(handle: AttributeHandle, type: BluetoothUUID) {
            self.handle = handle
            self.type = type
        }
    }
    /// The entries; all 16-bit (format 0x01) or all 128-bit (format 0x02).
    public var entries: [Entry]
    /// Creates a Find Information Response listing `entries`.
    public init(entries: [Entry]) { self.entries = entries }
    public init(from r: inout ByteReader) throws(WireError) {
        let format = try r.readUInt8("Format")
        let width: Int
        switch format {
        case 0x01: width = 2
        case 0x02: width = 16
        default: throw WireError(.invalidValue, "Find Information Response format 0x\([format].hexString())")
        }
        guard r.remainingCount > 0, r.remainingCount % (2 + width) == 0 else {
            throw WireError(.lengthMismatch, "Find Information Response: \(r.remainingCount) byte(s) of \(2 + width)-byte entries")
        }
        var list: [Entry] = []
        while !r.isAtEnd {
            let handle = try r.readAttributeHandle("Handle")
            list.append(Entry(handle: handle, type: try BluetoothUUID(littleEndian: try r.readBytes(width, "UUID"))))
        }
        entries = list
    }
    public func encode(into w: inout ByteWriter) {
        let short = entries.allSatisfy { $0.type.uint16 != nil }
        w.write(UInt8(short ? 0x01 : 0x02))
        for e in entries {
            w.write(e.handle)
            w.write(short ? e.type.attWireBytes : e.type.wireBytes128)
        }
    }
}

/// Find By Type Value Request. Core 5.4, Vol 3, Part F, 3.4.3.3.
public struct ATTFindByTypeValueRequest: ATTPDUParameters, Hashable {
    /// The PDU's opcode.
    public static let opcode = ATTOpcode.findByTypeValueRequest
    /// Range.
    public var range: ATTHandleRange
    /// The 16-bit attribute type.
    public var type: UInt16
    /// Value.
    public var value: [UInt8]
    /// Creates a Find By Type Value Request for the attributes in `range` whose 16-bit type is `type` and whose value
    /// is `value`.
    public init(range: ATTHandleRange, type: UInt16, value: [UInt8]) {
        self.range = range
        self.type = type
        self.value = value
    }
    public init(from r: inout ByteReader) throws(WireError) {
        range = try ATTHandleRange(from: &r)
        type = try r.readUInt16("Attribute Type")
        value = r.readRemaining()
    }
    public func encode(into w: inout ByteWriter) {
        range.encode(into: &w)
        w.write(type)
        w.write(value)
    }
}

/// Find By Type Value Response. Core 5.4, Vol 3, Part F, 3.4.3.4.
public struct ATTFindByTypeValueResponse: ATTPDUParameters, Hashable {
    /// The PDU's opcode.
    public static let opcode = ATTOpcode.findByTypeValueResponse
    /// Found attribute handle and its group end handle.
    public var handles: [ATTHandleRange]
    /// Creates a Find By Type Value Response: for each match, the found attribute's handle and the end of its group.
    public init(handles: [ATTHandleRange]) { self.handles = handles }
    public init(from r: inout ByteReader) throws(WireError) {
        guard r.remainingCount > 0, r.remainingCount % 4 == 0 else {
            throw WireError(.lengthMismatch, "Find By Type Value Response: \(r.remainingCount) byte(s) of 4-byte entries")
        }
        var list: [ATTHandleRange] = []
        while !r.isAtEnd { list.append(try ATTHandleRange(from: &r)) }
        handles = list
    }
    public func encode(into w: inout ByteWriter) { for h in handles { h.encode(into: &w) } }
}

/// Read By Type Request. Core 5.4, Vol 3, Part F, 3.4.4.1.
public struct ATTReadByTypeRequest: ATTPDUParameters, Hashable {
    /// The PDU's opcode.
    public static let opcode = ATTOpcode.readByTypeRequest
    /// Range.
    public var range: ATTHandleRange
    /// `Attribute Type`.
    public var type: BluetoothUUID
    /// Creates a Read By Type Request for the attributes of type `type` in `range`.
    public init(range: ATTHandleRange, type: BluetoothUUID) {
        self.range = range
        self.type = type
    }
    public init(from r: inout ByteReader) throws(WireError) {
        range = try ATTHandleRange(from: &r)
        let bytes = r.readRemaining()
        guard bytes.count == 2 || bytes.count == 16 else { throw WireError(.lengthMismatch, "attribute type of \(bytes.count) byte(s)") }
        type = try BluetoothUUID(littleEndian: bytes)
    }
    public func encode(into w: inout ByteWriter) {
        range.encode(into: &w)
        w.write(type.attWireBytes)
    }
}

/// Read By Type Response. Core 5.4, Vol 3, Part F, 3.4.4.2.
public struct ATTReadByTypeResponse: ATTPDUParameters, Hashable {
    /// The PDU's opcode.
    public static let opcode = ATTOpcode.readByTypeResponse
    /// A handle and its value.
    public struct Entry: Hashable, Sendable {
        /// `Attribute Handle`: the handle of the attribute read.
        public var handle: AttributeHandle
        /// Value.
        public var value: [UInt8]
        /// Creates an entry holding the attribute at `handle` and its value.
        public init(handle: AttributeHandle, value: [UInt8]) {
            self.handle = handle
            self.value = value
        }
    }
    /// The entries; every value has the same length.
    public var entries: [Entry]
    /// Creates a Read By Type Response listing `entries`.
    public init(entries: [Entry]) { self.entries = entries }
    public init(from r: inout ByteReader) throws(WireError) {
        let length = Int(try r.readUInt8("Length"))
        guard length >= 2 else { throw WireError(.invalidValue, "Read By Type Response entry length \(length) < 2") }
        guard r.remainingCount > 0, r.remainingCount % length == 0 else {
            throw WireError(.lengthMismatch, "Read By Type Response: \(r.remainingCount) byte(s) of \(length)-byte entries")
        }
        var list: [Entry] = []
        while !r.isAtEnd {
            let handle = try r.readAttributeHandle("Handle")
            list.append(Entry(handle: handle, value: try r.readBytes(length - 2, "Value")))
        }
        entries = list
    }
    public func encode(into w: inout ByteWriter) {
        w.write(UInt8(truncatingIfNeeded: 2 + (entries.first?.value.count ?? 0)))
        for e in entries {
            w.write(e.handle)
            w.write(e.value)
        }
    }
}

/// Read Request. Core 5.4, Vol 3, Part F, 3.4.4.3.
public struct ATTReadRequest: ATTPDUParameters, Hashable {
    /// The PDU's opcode.
    public static let opcode = ATTOpcode.readRequest
    /// `Attribute Handle`: the attribute to read.
    public var handle: AttributeHandle
    /// Creates a Read Request for the value of the attribute at `handle`.
    public init(handle: AttributeHandle) { self.handle = handle }
    public init(from r: inout ByteReader) throws(WireError) {
        handle = try r.readAttributeHandle("Attribute Handle")
        try r.expectEnd("Read Request")
    }
    public func encode(into w: inout ByteWriter) { w.write(handle) }
}

/// Read Response. Core 5.4, Vol 3, Part F, 3.4.4.4.
public struct ATTReadResponse: ATTPDUParameters, Hashable {
    /// The PDU's opcode.
    public static let opcode = ATTOpcode.readResponse
    /// Value.
    public var value: [UInt8]
    /// Creates a Read Response carrying `value`.
    public init(value: [UInt8]) { self.value = value }
    public init(from r: inout ByteReader) throws(WireError) { value = r.readRemaining() }
    public func encode(into w: inout ByteWriter) { w.write(value) }
}

/// Read Blob Request. Core 5.4, Vol 3, Part F, 3.4.4.5.
public struct ATTReadBlobRequest: ATTPDUParameters, Hashable {
    /// The PDU's opcode.
    public static let opcode = ATTOpcode.readBlobRequest
    /// `Attribute Handle`: the attribute to read.
    public var handle: AttributeHandle
    /// `Value Offset`.
    public var offset: UInt16
    /// Creates a Read Blob Request for the attribute at `handle`, starting at `offset`.
    public init(handle: AttributeHandle, offset: UInt16) {
        self.handle = handle
        self.offset = offset
    }
    public init(from r: inout ByteReader) throws(WireError) {
        handle = try r.readAttributeHandle("Attribute Handle")
        offset = try r.readUInt16("Value Offset")
        try r.expectEnd("Read Blob Request")
    }
    public func encode(into w: inout ByteWriter) {
        w.write(handle)
        w.write(offset)
    }
}

/// Read Blob Response. Core 5.4, Vol 3, Part F, 3.4.4.6.
public struct ATTReadBlobResponse: ATTPDUParameters, Hashable {
    /// The PDU's opcode.
    public static let opcode = ATTOpcode.readBlobResponse
    /// Value.
    public var value: [UInt8]
    /// Creates a Read Blob Response carrying the part of the value that starts at the requested offset.
    public init(value: [UInt8]) { self.value = value }
    public init(from r: inout ByteReader) throws(WireError) { value = r.readRemaining() }
    public func encode(into w: inout ByteWriter) { w.write(value) }
}

/// A list of at least two handles, shared by Read Multiple and Read Multiple Variable Requests.
func readHandleList(_ r: inout ByteReader, _ name: String) throws(WireError) -> [AttributeHandle] {
    guard r.remainingCount >= 4, r.remainingCount % 2 == 0 else {
        throw WireError(.lengthMismatch, "\(name): \(r.remainingCount) byte(s); need two or more 2-byte handles")
    }
    var list: [AttributeHandle] = []
    while !r.isAtEnd { list.append(try r.readAttributeHandle("Handle")) }
    return list
}

/// Read Multiple Request. Core 5.4, Vol 3, Part F, 3.4.4.7.
public struct ATTReadMultipleRequest: ATTPDUParameters, Hashable {
    /// The PDU's opcode.
    public static let opcode = ATTOpcode.readMultipleRequest
    /// Handles.
    public var handles: [AttributeHandle]
    /// Creates a Read Multiple Request for the values of the attributes at `handles`.
    public init(handles: [AttributeHandle]) { self.handles = handles }
    public init(from r: inout ByteReader) throws(WireError) { handles = try readHandleList(&r, "Read Multiple Request") }
    public func encode(into w: inout ByteWriter) { for h in handles { w.write(h) } }
}

/// Read Multiple Response. Core 5.4, Vol 3, Part F, 3.4.4.8.
public struct ATTReadMultipleResponse: ATTPDUParameters, Hashable {
    /// The PDU's opcode.
    public static let opcode = ATTOpcode.readMultipleResponse
    /// The concatenated values.
    public var values: [UInt8]
    /// Creates a Read Multiple Response carrying the requested values one after another.
    public init(values: [UInt8]) { self.values = values }
    public init(from r: inout ByteReader) throws(WireError) { values = r.readRemaining() }
    public func encode(into w: inout ByteWriter) { w.write(values) }
}

/// Read By Group Type Request. Core 5.4, Vol 3, Part F, 3.4.4.9.
public struct ATTReadByGroupTypeRequest: ATTPDUParameters, Hashable {
    /// The PDU's opcode.
    public static let opcode = ATTOpcode.readByGroupTypeRequest
    /// Range.
    public var range: ATTHandleRange
    /// `Attribute Type`.
    public var type: BluetoothUUID
    /// Creates a Read By Group Type Request for the groups of type `type` (a service declaration type, for instance) in
    /// `range`.
    public init(range: ATTHandleRange, type: BluetoothUUID) {
        self.range = range
        self.type = type
    }
    public init(from r: inout ByteReader) throws(WireError) {
        range = try ATTHandleRange(from: &r)
        let bytes = r.readRemaining()
        guard bytes.count == 2 || bytes.count == 16 else { throw WireError(.lengthMismatch, "group type of \(bytes.count) byte(s)") }
        type = try BluetoothUUID(littleEndian: bytes)
    }
    public func encode(into w: inout ByteWriter) {
        range.encode(into: &w)
        w.write(type.attWireBytes)
    }
}

/// Read By Group Type Response. Core 5.4, Vol 3, Part F, 3.4.4.10.
public struct ATTReadByGroupTypeResponse: ATTPDUParameters, Hashable {
    /// The PDU's opcode.
    public static let opcode = ATTOpcode.readByGroupTypeResponse
    /// A group: its handle, end group handle and value.
    public struct Entry: Hashable, Sendable {
        /// `Attribute Handle`: the handle of the group's declaration.
        public var handle: AttributeHandle
        /// End group handle.
        public var endGroupHandle: AttributeHandle
        /// Value.
        public var value: [UInt8]
        /// Creates an entry for the group that starts at `handle` and ends at `endGroupHandle`, with the value of its
        /// declaration.
        public init(handle: AttributeHandle, endGroupHandle: AttributeHandle, value: [UInt8]) {
            self.handle = handle
            self.endGroupHandle = endGroupHandle
            self.value = value
        }
    }
    /// Entries.
    public var entries: [Entry]
    /// Creates a Read By Group Type Response listing `entries`.
    public init(entries: [Entry]) { self.entries = entries }
    public init(from r: inout ByteReader) throws(WireError) {
        let length = Int(try r.readUInt8("Length"))
        guard length >= 4 else { throw WireError(.invalidValue, "Read By Group Type Response entry length \(length) < 4") }
        guard r.remainingCount > 0, r.remainingCount % length == 0 else {
            throw WireError(.lengthMismatch, "Read By Group Type Response: \(r.remainingCount) byte(s) of \(length)-byte entries")
        }
        var list: [Entry] = []
        while !r.isAtEnd {
            let handle = try r.readAttributeHandle("Attribute Handle")
            let end = try r.readAttributeHandle("End Group Handle")
            list.append(Entry(handle: handle, endGroupHandle: end, value: try r.readBytes(length - 4, "Attribute Value")))
        }
        entries = list
    }
    public func encode(into w: inout ByteWriter) {
        w.write(UInt8(truncatingIfNeeded: 4 + (entries.first?.value.count ?? 0)))
        for e in entries {
            w.write(e.handle)
            w.write(e.endGroupHandle)
            w.write(e.value)
        }
    }
}
