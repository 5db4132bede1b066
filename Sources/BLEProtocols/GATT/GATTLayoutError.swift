import BLEWire

/// Why services cannot be laid out with the handles they ask for (``GATTDatabase/init(exactly:)``): the code says
/// what went wrong and where (``GATTLayoutPlace``: which service, characteristic and descriptor by index, which
/// field), the reason why in words.
public typealias GATTLayoutError = BLEFailure<GATTLayoutErrorCode>

extension BLEFailure where Code == GATTLayoutErrorCode {
    /// The field that cannot be honoured.
    public typealias Field = GATTLayoutPlace.Field
    /// The index of the service.
    public var service: Int { code.place.service }
    /// The index of the characteristic in the service, when the field is a characteristic's or a descriptor's.
    public var characteristic: Int? { code.place.characteristic }
    /// The index of the descriptor in the characteristic, when the field is a descriptor's.
    public var descriptor: Int? { code.place.descriptor }
    /// The field.
    public var field: GATTLayoutPlace.Field { code.place.field }
}

/// Where in a list of service definitions a layout failed: the service, the characteristic and the descriptor by
/// index, and the field.
public struct GATTLayoutPlace: Sendable, Hashable, CustomStringConvertible {
    /// The field that cannot be honoured.
    public enum Field: Sendable, Hashable {
        /// The declaration's (or the descriptor's) handle.
        case handle
        /// A characteristic's value handle.
        case valueHandle
        /// A service's end group handle.
        case endHandle
        /// The include at this position of the service's includes.
        case include(Int)
        /// The CCCD added after a characteristic's value.
        case clientConfiguration
        /// The user description added from ``GATTCharacteristicDefinition/userDescription``.
        case userDescription
    }
    /// The index of the service.
    public var service: Int
    /// The index of the characteristic in the service, when the field is a characteristic's or a descriptor's.
    public var characteristic: Int?
    /// The index of the descriptor in the characteristic, when the field is a descriptor's.
    public var descriptor: Int?
    /// The field.
    public var field: Field
    /// Names a place.
    public init(service: Int, characteristic: Int? = nil, descriptor: Int? = nil, field: Field) {
        self.service = service
        self.characteristic = characteristic
        self.descriptor = descriptor
        self.field = field
    }
    /// `service 1, characteristic 0: valueHandle`.
    public var description: String {
        var place = "service \(service)"
        if let characteristic { place += ", characteristic \(characteristic)" }
        if let descriptor { place += ", descriptor \(descriptor)" }
        return "\(place): \(field)"
    }
}

/// The kind of a ``GATTLayoutError``, with its ``place``: an open struct, so a release may add kinds. Every kind is
/// ``BLEErrorCategory/invalidInput``: the definitions ask for what cannot be.
public struct GATTLayoutErrorCode: BLEErrorCode {
    private enum Kind: Hashable, Sendable { case invalidHandle, handlesExhausted, missingInclude }
    private let kind: Kind
    /// Where the layout failed.
    public let place: GATTLayoutPlace
    private init(_ kind: Kind, _ place: GATTLayoutPlace) {
        self.kind = kind
        self.place = place
    }

    /// A handle asked for is 0, not after the previous attribute, or (an end handle) before the service's last one.
    public static func invalidHandle(_ place: GATTLayoutPlace) -> GATTLayoutErrorCode { GATTLayoutErrorCode(.invalidHandle, place) }
    /// No handle is left for the attribute: handles end at 0xFFFF.
    public static func handlesExhausted(_ place: GATTLayoutPlace) -> GATTLayoutErrorCode { GATTLayoutErrorCode(.handlesExhausted, place) }
    /// An include names a service that does not exist or was not laid out.
    public static func missingInclude(_ place: GATTLayoutPlace) -> GATTLayoutErrorCode { GATTLayoutErrorCode(.missingInclude, place) }

    public var category: BLEErrorCategory { .invalidInput }

    /// The kind and the place: `invalidHandle(service 1, characteristic 0: valueHandle)`.
    public var description: String {
        switch kind {
        case .invalidHandle: "invalidHandle(\(place))"
        case .handlesExhausted: "handlesExhausted(\(place))"
        case .missingInclude: "missingInclude(\(place))"
        }
    }
}

/// Four uppercase hex digits.
func hex4(_ v: Int) -> String {
    let digits = String(v, radix: 16, uppercase: true)
    return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
}
