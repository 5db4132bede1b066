import BLEWire

/// A discovered characteristic with its descriptors.
public struct GATTDiscoveredCharacteristic: Sendable, Hashable {
    /// The characteristic.
    public var characteristic: GATTCharacteristic
    /// Its descriptors, in handle order (empty when they were not asked for, or when it has none).
    public var descriptors: [GATTDescriptor]
    /// Creates a discovered characteristic together with the descriptors found after its value.
    public init(characteristic: GATTCharacteristic, descriptors: [GATTDescriptor]) {
        self.characteristic = characteristic
        self.descriptors = descriptors
    }
}

/// A discovered primary service with its characteristics.
public struct GATTDiscoveredService: Sendable, Hashable {
    /// The service.
    public var service: GATTService
    /// Its characteristics, in handle order.
    public var characteristics: [GATTDiscoveredCharacteristic]
    /// Creates a discovered primary service together with its discovered characteristics.
    public init(service: GATTService, characteristics: [GATTDiscoveredCharacteristic]) {
        self.service = service
        self.characteristics = characteristics
    }
}

/// Descriptor discovery of several characteristics at once (Find Information). Each request starts at the first
/// handle where a descriptor may still be and runs to the last such handle, so one response can cover the gaps of
/// several characteristics; attributes between the gaps (declarations, values) are skipped, and the walk jumps over
/// handles known to hold none. Characteristics whose value is their last handle cost nothing.
///
/// A request covering several gaps is answered with the same first attributes as a request covering only the first
/// gap, up to where the response stops, so this never takes more requests than ``DescriptorDiscovery`` run once per
/// characteristic, and usually fewer. Core 5.4, Vol 3, Part G, 4.7.1 (Discover All Characteristic Descriptors over a
/// wider handle range) and Vol 3, Part F, 3.4.3.1.
public struct DescriptorsDiscovery: GATTProcedure {
    /// Where each characteristic's descriptors may be (`nil`: nowhere).
    private let ranges: [ClosedRange<AttributeHandle>?]
    private var found: [[GATTDescriptor]]
    /// The range of the request in flight.
    private var asked: ClosedRange<AttributeHandle>?

    /// Discovers the descriptors in each of `ranges` (a characteristic's ``GATTCharacteristic/descriptorRange``;
    /// `nil` for none). The output has one list per range, in the same order.
    public init(in ranges: [ClosedRange<AttributeHandle>?]) {
        self.ranges = ranges
        found = Array(repeating: [], count: ranges.count)
    }

    /// Discovers the descriptors of each of `characteristics`; the output has one list per characteristic.
    public init(of characteristics: [GATTCharacteristic]) {
        self.init(in: characteristics.map(\.descriptorRange))
    }

    /// The request for the first handle after `known` (from the start when `nil`) where a descriptor may still be, up
    /// to the last such handle; finished when there is none. Every handle up to `known` is known.
    private mutating func next(after known: AttributeHandle?) -> GATTProcedureStep<[[GATTDescriptor]]> {
        var first: AttributeHandle?
        var last: AttributeHandle?
        for case let range? in ranges {
            let start: AttributeHandle
            if let known {
                guard range.upperBound > known, let after = known.next else { continue }
                start = max(range.lowerBound, after)
            } else {
                start = range.lowerBound
            }
            first = min(first ?? start, start)
            last = max(last ?? range.upperBound, range.upperBound)
        }
        guard let first, let last else {
            asked = nil
            return .finished(found)
        }
        asked = first...last
        return .request(.findInformationRequest(.init(range: ATTHandleRange(start: first, end: last))))
    }

    public mutating func start() throws(GATTError) -> GATTProcedureStep<[[GATTDescriptor]]> { next(after: nil) }

    public mutating func receive(_ response: ATTPDU) throws(GATTError) -> GATTProcedureStep<[[GATTDescriptor]]> {
        guard let asked else { throw GATTError(.malformedResponse, "descriptor discovery: nothing was asked") }
        switch response {
        case .errorResponse(let e) where e.error == .attributeNotFound:
            // Nothing from the request's start to its end: every range is known.
            return next(after: asked.upperBound)
        case .errorResponse(let e):
            throw e.gattError("descriptor discovery")
        case .findInformationResponse(let r):
            // Handles rising strictly within the request (the walk throws otherwise).
            var walk = HandleWalk(asked)
            _ = try walk.advance(past: r.entries.map { ($0.handle, $0.handle) }, "descriptor discovery")
            for entry in r.entries {
                for (index, range) in ranges.enumerated() where range?.contains(entry.handle) == true {
                    found[index].append(GATTDescriptor(uuid: entry.type, handle: entry.handle))
                }
            }
            return next(after: r.entries.last?.handle ?? asked.upperBound)
        default:
            throw GATTError(.malformedResponse, "descriptor discovery: \(response.opcode)")
        }
    }
}

/// Discovery of a whole database in as few round trips as the Core Specification allows: the primary services
/// (Read By Group Type), then the characteristics of all of them in one walk over the handles from the first
/// service's start to the last one's end (Read By Type of Characteristic declarations, split into services by their
/// ranges; those outside every primary service, in secondary services, are left out), then, when asked for, the
/// descriptors where a characteristic leaves room for them (``DescriptorsDiscovery``).
///
/// The result is what discovering the services, each one's characteristics and each characteristic's descriptors
/// separately gives, in fewer requests: a service's characteristics end at its end, as when it is walked alone.
/// Core 5.4, Vol 3, Part G, 4.4.1, 4.6.1 and 4.7.1.
public struct DatabaseDiscovery: GATTProcedure {
    private enum Phase: Sendable {
        case services(PrimaryServiceDiscovery)
        case characteristics(CharacteristicDiscovery)
        case descriptors(DescriptorsDiscovery)
        case done
    }

    private var phase: Phase = .done
    private let withDescriptors: Bool
    private var services: [GATTService] = []
    /// The characteristics of each service.
    private var characteristics: [[GATTCharacteristic]] = []

    /// Discovers every primary service and its characteristics, and their descriptors unless `descriptors` is false.
    public init(descriptors: Bool = true) {
        withDescriptors = descriptors
    }

    public mutating func start() throws(GATTError) -> GATTProcedureStep<[GATTDiscoveredService]> {
        var discovery = PrimaryServiceDiscovery()
        let step = try discovery.start()
        phase = .services(discovery)
        return try follow(step)
    }

    public mutating func receive(_ response: ATTPDU) throws(GATTError) -> GATTProcedureStep<[GATTDiscoveredService]> {
        switch phase {
        case .services(var discovery):
            let step = try discovery.receive(response)
            phase = .services(discovery)
            return try follow(step)
        case .characteristics(var discovery):
            let step = try discovery.receive(response)
            phase = .characteristics(discovery)
            return try follow(step)
        case .descriptors(var discovery):
            let step = try discovery.receive(response)
            phase = .descriptors(discovery)
            return follow(step)
        case .done:
            throw GATTError(.malformedResponse, "database discovery: nothing was asked")
        }
    }

    private mutating func follow(_ step: GATTProcedureStep<[GATTService]>) throws(GATTError) -> GATTProcedureStep<[GATTDiscoveredService]> {
        switch step {
        case .request(let pdu): return .request(pdu)
        case .finished(let list):
            services = list
            // The walk made the services rise without overlapping, so the last one ends last.
            guard let first = list.first, let last = list.last else { return finish() }
            var discovery = CharacteristicDiscovery(in: first.startHandle...max(first.startHandle, last.endHandle))
            let next = try discovery.start()
            phase = .characteristics(discovery)
            return try follow(next)
        }
    }

    private mutating func follow(_ step: GATTProcedureStep<[GATTCharacteristic]>) throws(GATTError) -> GATTProcedureStep<[GATTDiscoveredService]> {
        switch step {
        case .request(let pdu): return .request(pdu)
        case .finished(let list):
            characteristics = try Self.split(list, into: services)
            guard withDescriptors else { return finish() }
            var discovery = DescriptorsDiscovery(of: characteristics.flatMap { $0 })
            let next = try discovery.start()
            phase = .descriptors(discovery)
            return follow(next)
        }
    }

    private mutating func follow(_ step: GATTProcedureStep<[[GATTDescriptor]]>) -> GATTProcedureStep<[GATTDiscoveredService]> {
        switch step {
        case .request(let pdu): return .request(pdu)
        case .finished(let lists): return finish(descriptors: lists)
        }
    }

    /// The result, with `descriptors` listed per characteristic in the order of `characteristics` flattened.
    private mutating func finish(descriptors: [[GATTDescriptor]] = []) -> GATTProcedureStep<[GATTDiscoveredService]> {
        phase = .done
        var index = 0
        var result: [GATTDiscoveredService] = []
        for (service, list) in zip(services, characteristics) {
            var entries: [GATTDiscoveredCharacteristic] = []
            for characteristic in list {
                entries.append(GATTDiscoveredCharacteristic(characteristic: characteristic,
                                                            descriptors: index < descriptors.count ? descriptors[index] : []))
                index += 1
            }
            result.append(GATTDiscoveredService(service: service, characteristics: entries))
        }
        return .finished(result)
    }

    /// Splits characteristics found over several services' handles (in handle order) into those services (rising,
    /// disjoint), each ending at the latest at its service's end; those outside every service are dropped. A value
    /// outside its declaration's service breaks the protocol, as it does when the service is walked alone.
    static func split(_ all: [GATTCharacteristic], into services: [GATTService]) throws(GATTError) -> [[GATTCharacteristic]] {
        var result = Array(repeating: [GATTCharacteristic](), count: services.count)
        var index = 0
        for var characteristic in all {
            while index < services.count, services[index].endHandle < characteristic.declarationHandle { index += 1 }
            guard index < services.count, services[index].range.contains(characteristic.declarationHandle) else { continue }
            let end = services[index].endHandle
            guard characteristic.valueHandle <= end else {
                throw GATTError(.malformedResponse, "characteristic declaration at \(characteristic.declarationHandle): value handle \(characteristic.valueHandle) past its service's end \(end)")
            }
            characteristic.endHandle = min(characteristic.endHandle, end)
            result[index].append(characteristic)
        }
        return result
    }
}
