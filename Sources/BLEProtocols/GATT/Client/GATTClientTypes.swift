import BLEWire

/// A discovered service. Core 5.4, Vol 3, Part G, 4.4.
public struct GATTService: Sendable, Hashable {
    /// The service UUID.
    public var uuid: BluetoothUUID
    /// Whether it is a primary service (included services are reported as secondary).
    public var isPrimary: Bool
    /// The service declaration handle.
    public var startHandle: AttributeHandle
    /// The last handle of the service.
    public var endHandle: AttributeHandle
    /// Creates a discovered service with its UUID, its kind and the handles of its declaration and of its last
    /// attribute.
    public init(uuid: BluetoothUUID, isPrimary: Bool, startHandle: AttributeHandle, endHandle: AttributeHandle) {
        self.uuid = uuid
        self.isPrimary = isPrimary
        self.startHandle = startHandle
        self.endHandle = endHandle
    }
    /// The service's handles.
    public var range: ClosedRange<AttributeHandle> { startHandle...max(startHandle, endHandle) }
}

/// A discovered characteristic. Core 5.4, Vol 3, Part G, 4.6.
public struct GATTCharacteristic: Sendable, Hashable {
    /// The characteristic UUID.
    public var uuid: BluetoothUUID
    /// The properties from its declaration.
    public var properties: GATTCharacteristicProperties
    /// The handle of its declaration.
    public var declarationHandle: AttributeHandle
    /// The handle of its value.
    public var valueHandle: AttributeHandle
    /// The last handle that belongs to the characteristic (its last descriptor).
    public var endHandle: AttributeHandle
    /// Creates a discovered characteristic from its declaration: UUID, properties, declaration and value handles, and
    /// the last handle that belongs to it.
    public init(uuid: BluetoothUUID, properties: GATTCharacteristicProperties, declarationHandle: AttributeHandle, valueHandle: AttributeHandle,
                endHandle: AttributeHandle) {
        self.uuid = uuid
        self.properties = properties
        self.declarationHandle = declarationHandle
        self.valueHandle = valueHandle
        self.endHandle = endHandle
    }
    /// The handles where its descriptors may be (after the value, up to ``endHandle``); `nil` when there is no room.
    public var descriptorRange: ClosedRange<AttributeHandle>? {
        guard valueHandle < endHandle, let first = valueHandle.next else { return nil }
        return first...endHandle
    }
}

/// A discovered descriptor. Core 5.4, Vol 3, Part G, 4.7.
public struct GATTDescriptor: Sendable, Hashable {
    /// The descriptor UUID.
    public var uuid: BluetoothUUID
    /// The descriptor handle.
    public var handle: AttributeHandle
    /// Creates a discovered descriptor of type `uuid` at `handle`.
    public init(uuid: BluetoothUUID, handle: AttributeHandle) {
        self.uuid = uuid
        self.handle = handle
    }
}

/// Why a GATT operation failed.
public typealias GATTError = BLEFailure<GATTErrorCode>

/// The kind of a ``GATTError``: an open struct, so a release may add kinds (a `switch` over codes needs a `default:`).
///
/// ``att(_:handle:)`` is built by a static function and read back by ``attError`` and ``handle``.
public struct GATTErrorCode: BLEErrorCode {
    private enum Backing: Hashable, Sendable {
        case att(ATTErrorCode, AttributeHandle)
        case timeout
        case malformedResponse
        case disconnected
        case invalidValueLength
        case cancelled
    }

    private let backing: Backing
    private init(_ backing: Backing) { self.backing = backing }

    /// The server answered with an ATT error. ``BLEErrorCategory/protocolError``.
    public static func att(_ code: ATTErrorCode, handle: AttributeHandle) -> GATTErrorCode { GATTErrorCode(.att(code, handle)) }
    /// No response within the ATT transaction timeout (30 s): the ATT bearer is closed, as the specification requires
    /// (Core 5.4, Vol 3, Part F, 3.3.3); the link stays up.
    /// ``BLEErrorCategory/timedOut``.
    public static let timeout = GATTErrorCode(.timeout)
    /// The server's response broke the protocol (wrong opcode, handles going backwards...).
    /// ``BLEErrorCategory/protocolError``.
    public static let malformedResponse = GATTErrorCode(.malformedResponse)
    /// The link is down. ``BLEErrorCategory/disconnected``.
    public static let disconnected = GATTErrorCode(.disconnected)
    /// The value does not fit (over 512 bytes, or over what the bearer carries): what ATT answers with
    /// Invalid Attribute Value Length. ``BLEErrorCategory/protocolError``.
    public static let invalidValueLength = GATTErrorCode(.invalidValueLength)
    /// The operation was cancelled (the bearer was closed by this side). ``BLEErrorCategory/cancelled``.
    public static let cancelled = GATTErrorCode(.cancelled)

    public var category: BLEErrorCategory {
        switch backing {
        case .att, .malformedResponse, .invalidValueLength: .protocolError
        case .timeout: .timedOut
        case .disconnected: .disconnected
        case .cancelled: .cancelled
        }
    }

    /// The kind, with its payload: `notConnected`, `commandFailed(...)`.
    public var description: String {
        switch backing {
        case .att(let code, let handle): "att(\(code), handle: \(handle))"
        case .timeout: "timeout"
        case .malformedResponse: "malformedResponse"
        case .disconnected: "disconnected"
        case .invalidValueLength: "invalidValueLength"
        case .cancelled: "cancelled"
        }
    }

    /// The server's ATT error, of ``att(_:handle:)``.
    public var attError: ATTErrorCode? {
        switch backing {
        case .att(let x, _): x
        default: nil
        }
    }

    /// The handle the server named in its ATT error, of ``att(_:handle:)``.
    public var handle: AttributeHandle? {
        switch backing {
        case .att(_, let x): x
        default: nil
        }
    }
}
