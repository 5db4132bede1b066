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
public struct GATTError: BLEError {
    /// The kind of failure.
    public enum Code: Sendable, Hashable {
        /// The server answered with an ATT error.
        case att(ATTErrorCode, handle: AttributeHandle)
        /// No response within the ATT transaction timeout (30 s); the link was closed, as the spec requires.
        case timeout
        /// The server's response broke the protocol (wrong opcode, handles going backwards...).
        case malformedResponse
        /// The link is down.
        case disconnected
        /// The value does not fit (over 512 bytes).
        case invalidValueLength
        /// The operation was cancelled (the bearer was closed by this side).
        case cancelled
    }
    /// The kind of failure.
    public var code: Code
    /// A human-readable explanation.
    public var reason: String
    /// The source file that raised the error.
    public var file: String
    /// The source line that raised the error.
    public var line: Int

    /// Creates an error.
    public init(_ code: Code, _ reason: String, file: String = #fileID, line: Int = #line) {
        self.code = code
        self.reason = reason
        self.file = file
        self.line = line
    }
}
