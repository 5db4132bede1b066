import BLEWire

/// MTU exchange. Core 5.4, Vol 3, Part G, 4.3.1. The output is the effective ATT_MTU: the smaller of both sides' MTUs,
/// never below 23.
public struct MTUExchange: GATTProcedure {
    /// The MTU this client can receive.
    public let clientMTU: Int

    /// Offers `clientMTU` (clamped to 23...517).
    public init(clientMTU: Int) {
        self.clientMTU = max(ATT.defaultLEMTU, min(clientMTU, ATT.maximumMTU))
    }

    public mutating func start() throws(GATTError) -> GATTProcedureStep<Int> {
        .request(.exchangeMTURequest(.init(mtu: UInt16(clientMTU))))
    }

    public mutating func receive(_ response: ATTPDU) throws(GATTError) -> GATTProcedureStep<Int> {
        switch response {
        case .exchangeMTUResponse(let r): return .finished(max(ATT.defaultLEMTU, min(clientMTU, Int(r.mtu))))
        // A server that does not support the exchange keeps the default MTU. Core 5.4, Vol 3, Part F, 3.4.2.2.
        case .errorResponse(let e) where e.error == .requestNotSupported: return .finished(ATT.defaultLEMTU)
        case .errorResponse(let e): throw e.gattError("MTU exchange")
        default: throw GATTError(.malformedResponse, "MTU exchange: \(response.opcode)")
        }
    }
}

/// Reads a value whole: a Read, then Read Blobs while each part fills the response, up to the 512-byte limit of an
/// attribute value. Core 5.4, Vol 3, Part G, 4.8.1 and 4.8.3. A server that sends more than 512 bytes breaks the
/// protocol (Part F, 3.2.9) and fails the read.
public struct ValueRead: GATTProcedure {
    /// The attribute read.
    public let handle: AttributeHandle
    /// The link's ATT_MTU.
    public let mtu: Int
    private var value: [UInt8] = []

    /// Reads attribute `handle` over a link whose ATT_MTU is `mtu`.
    public init(handle: AttributeHandle, mtu: Int) {
        self.handle = handle
        self.mtu = max(ATT.defaultLEMTU, mtu)
    }

    public mutating func start() throws(GATTError) -> GATTProcedureStep<[UInt8]> { .request(.readRequest(.init(handle: handle))) }

    public mutating func receive(_ response: ATTPDU) throws(GATTError) -> GATTProcedureStep<[UInt8]> {
        let part: [UInt8]
        switch response {
        case .readResponse(let r) where value.isEmpty: part = r.value
        case .readBlobResponse(let r) where !value.isEmpty: part = r.value
        // The value ended exactly at a part's end: no more to read.
        case .errorResponse(let e) where !value.isEmpty && (e.error == .attributeNotLong || e.error == .invalidOffset):
            return .finished(value)
        case .errorResponse(let e): throw e.gattError("read")
        default: throw GATTError(.malformedResponse, "read: \(response.opcode)")
        }
        guard part.count <= ATT.maximumReadValueLength(mtu: mtu) else {
            throw GATTError(.malformedResponse, "read: \(part.count) bytes in one response at ATT_MTU \(mtu)")
        }
        value += part
        guard value.count <= ATT.maximumAttributeValueLength else {
            throw GATTError(.malformedResponse, "read: the server sent \(value.count) bytes; an attribute value has at most 512")
        }
        guard part.count == ATT.maximumReadValueLength(mtu: mtu), value.count < ATT.maximumAttributeValueLength else {
            return .finished(value)
        }
        return .request(.readBlobRequest(.init(handle: handle, offset: UInt16(value.count))))
    }
}

/// Writes a value with a Write Request when it fits one, else as a reliable long write: Prepare Write Requests whose
/// echoes must equal what was sent, then Execute Write. On any failure the prepared writes are cancelled before the
/// error is reported. Core 5.4, Vol 3, Part G, 4.9.3, 4.9.4 and 4.9.5.
public struct ValueWrite: GATTProcedure {
    /// The attribute written.
    public let handle: AttributeHandle
    /// The value.
    public let value: [UInt8]
    /// The link's ATT_MTU.
    public let mtu: Int
    private var offset = 0
    private var cancelling: GATTError?
    private var executing = false

    /// Writes `value` to attribute `handle` over a link whose ATT_MTU is `mtu`.
    public init(handle: AttributeHandle, value: [UInt8], mtu: Int) {
        self.handle = handle
        self.value = value
        self.mtu = max(ATT.defaultLEMTU, mtu)
    }

    /// Whether the value goes as prepared writes.
    public var isLong: Bool { value.count > ATT.maximumWriteValueLength(mtu: mtu) }

    public mutating func start() throws(GATTError) -> GATTProcedureStep<Void> {
        guard value.count <= ATT.maximumAttributeValueLength else {
            throw GATTError(.invalidValueLength, "\(value.count) bytes: an attribute value has at most 512 (Core 5.4, Vol 3, Part F, 3.2.9)")
        }
        guard isLong else { return .request(.writeRequest(.init(handle: handle, value: value))) }
        return .request(.prepareWriteRequest(nextPart))
    }

    private var nextPart: ATTPrepareWriteRequest {
        let end = min(value.count, offset + ATT.maximumPrepareWriteValueLength(mtu: mtu))
        return ATTPrepareWriteRequest(handle: handle, offset: UInt16(offset), value: Array(value[offset..<end]))
    }

    public mutating func receive(_ response: ATTPDU) throws(GATTError) -> GATTProcedureStep<Void> {
        if let cancelling { throw cancelling }
        guard isLong else {
            switch response {
            case .writeResponse: return .finished(())
            case .errorResponse(let e): throw e.gattError("write")
            default: throw GATTError(.malformedResponse, "write: \(response.opcode)")
            }
        }
        if executing {
            switch response {
            case .executeWriteResponse: return .finished(())
            case .errorResponse(let e): throw e.gattError("execute write")
            default: throw GATTError(.malformedResponse, "execute write: \(response.opcode)")
            }
        }
        let sent = nextPart
        switch response {
        case .prepareWriteResponse(let echo) where echo.handle == sent.handle && echo.offset == sent.offset && echo.value == sent.value:
            offset += sent.value.count
            if offset < value.count { return .request(.prepareWriteRequest(nextPart)) }
            executing = true
            return .request(.executeWriteRequest(.init(commit: true)))
        case .prepareWriteResponse:
            return cancel(GATTError(.malformedResponse, "prepared write echo differs at offset \(sent.offset)"))
        case .errorResponse(let e):
            return cancel(e.gattError("prepare write"))
        default:
            return cancel(GATTError(.malformedResponse, "prepare write: \(response.opcode)"))
        }
    }

    /// Cancels the queued parts; the error is reported once the server answered.
    private mutating func cancel(_ error: GATTError) -> GATTProcedureStep<Void> {
        cancelling = error
        return .request(.executeWriteRequest(.init(commit: false)))
    }
}

/// Reads the values of every attribute of a type in a range (Read Using Characteristic UUID): one request, the
/// first page of results. Core 5.4, Vol 3, Part G, 4.8.2.
public struct ReadByType: GATTProcedure {
    /// The attribute type.
    public let type: BluetoothUUID
    /// The range searched.
    public let range: ClosedRange<AttributeHandle>

    /// Reads the attributes of `type` in `range`.
    public init(type: BluetoothUUID, in range: ClosedRange<AttributeHandle> = 0x0001...0xFFFF) {
        self.type = type
        self.range = max(1, range.lowerBound)...max(1, range.upperBound)
    }

    public mutating func start() throws(GATTError) -> GATTProcedureStep<[(handle: AttributeHandle, value: [UInt8])]> {
        .request(.readByTypeRequest(.init(range: .init(start: range.lowerBound, end: range.upperBound), type: type)))
    }

    public mutating func receive(_ response: ATTPDU) throws(GATTError) -> GATTProcedureStep<[(handle: AttributeHandle, value: [UInt8])]> {
        switch response {
        case .readByTypeResponse(let r):
            guard r.entries.allSatisfy({ range.contains($0.handle) }) else { throw GATTError(.malformedResponse, "read by type: a handle outside the range") }
            return .finished(r.entries.map { ($0.handle, $0.value) })
        case .errorResponse(let e): throw e.gattError("read by type")
        default: throw GATTError(.malformedResponse, "read by type: \(response.opcode)")
        }
    }
}

/// Reads several values in one request (Read Multiple Variable Length Values; each value whole up to what fits).
/// Core 5.4, Vol 3, Part G, 4.8.5.
public struct MultipleRead: GATTProcedure {
    /// The attributes read, in order.
    public let handles: [AttributeHandle]

    /// Reads `handles` (at least two).
    public init(handles: [AttributeHandle]) { self.handles = handles }

    public mutating func start() throws(GATTError) -> GATTProcedureStep<[[UInt8]]> {
        guard handles.count >= 2 else { throw GATTError(.invalidValueLength, "Read Multiple needs at least two handles") }
        return .request(.readMultipleVariableRequest(.init(handles: handles)))
    }

    public mutating func receive(_ response: ATTPDU) throws(GATTError) -> GATTProcedureStep<[[UInt8]]> {
        switch response {
        case .readMultipleVariableResponse(let r):
            guard r.entries.count <= handles.count else { throw GATTError(.malformedResponse, "read multiple: more values than handles") }
            return .finished(r.entries.map(\.value))
        case .errorResponse(let e): throw e.gattError("read multiple")
        default: throw GATTError(.malformedResponse, "read multiple: \(response.opcode)")
        }
    }
}
