import BLEWire

/// Primary service discovery: all services (Read By Group Type) or those of one UUID (Find By Type Value).
/// Core 5.4, Vol 3, Part G, 4.4.1 and 4.4.2.
public struct PrimaryServiceDiscovery: GATTProcedure {
    private var walk: HandleWalk
    private let uuid: BluetoothUUID?
    private var found: [GATTService] = []

    /// Discovers the primary services in `range` (the whole database by default), or only those of type `uuid`.
    public init(uuid: BluetoothUUID? = nil, in range: ClosedRange<AttributeHandle> = 0x0001...0xFFFF) {
        self.uuid = uuid
        walk = HandleWalk(range)
    }

    private var nextRequest: ATTPDU {
        if let uuid {
            return .findByTypeValueRequest(.init(range: walk.range, type: 0x2800, value: uuid.attWireBytes))
        }
        return .readByGroupTypeRequest(.init(range: walk.range, type: 0x2800))
    }

    public mutating func start() throws(GATTError) -> GATTProcedureStep<[GATTService]> { .request(nextRequest) }

    public mutating func receive(_ response: ATTPDU) throws(GATTError) -> GATTProcedureStep<[GATTService]> {
        let spans: [(first: AttributeHandle, last: AttributeHandle)]
        switch response {
        case .errorResponse(let e) where e.error == .attributeNotFound:
            return .finished(found)
        case .errorResponse(let e):
            throw e.gattError("primary service discovery")
        case .readByGroupTypeResponse(let r) where uuid == nil:
            for entry in r.entries {
                guard entry.value.count == 2 || entry.value.count == 16, let service = try? BluetoothUUID(littleEndian: entry.value) else {
                    throw GATTError(.malformedResponse, "service declaration at \(entry.handle): a \(entry.value.count)-byte UUID")
                }
                found.append(GATTService(uuid: service, isPrimary: true, startHandle: entry.handle, endHandle: entry.endGroupHandle))
            }
            spans = r.entries.map { ($0.handle, $0.endGroupHandle) }
        case .findByTypeValueResponse(let r) where uuid != nil:
            for range in r.handles {
                found.append(GATTService(uuid: uuid ?? BluetoothUUID(0), isPrimary: true, startHandle: range.start, endHandle: range.end))
            }
            spans = r.handles.map { ($0.start, $0.end) }
        default:
            throw GATTError(.malformedResponse, "primary service discovery: \(response.opcode)")
        }
        return try walk.advance(past: spans, "primary service discovery") ? .request(nextRequest) : .finished(found)
    }
}

/// Characteristic discovery within a service (Read By Type of Characteristic declarations), optionally keeping only
/// one UUID. Each characteristic ends where the next declaration starts, the last at the range's end. The walk ends
/// on Attribute Not Found, or without asking when the last value leaves at most one handle of the range (a
/// declaration needs two). Core 5.4, Vol 3, Part G, 4.6.1 and 4.6.2.
public struct CharacteristicDiscovery: GATTProcedure {
    private var walk: HandleWalk
    private let uuid: BluetoothUUID?
    private var found: [GATTCharacteristic] = []

    /// Discovers the characteristics in `range` (a service's handles).
    public init(in range: ClosedRange<AttributeHandle>, uuid: BluetoothUUID? = nil) {
        walk = HandleWalk(range)
        self.uuid = uuid
    }

    /// Discovers the characteristics of `service`.
    public init(of service: GATTService, uuid: BluetoothUUID? = nil) {
        self.init(in: service.range, uuid: uuid)
    }

    private var nextRequest: ATTPDU { .readByTypeRequest(.init(range: walk.range, type: 0x2803)) }

    public mutating func start() throws(GATTError) -> GATTProcedureStep<[GATTCharacteristic]> { .request(nextRequest) }

    public mutating func receive(_ response: ATTPDU) throws(GATTError) -> GATTProcedureStep<[GATTCharacteristic]> {
        switch response {
        case .errorResponse(let e) where e.error == .attributeNotFound:
            return .finished(result())
        case .errorResponse(let e):
            throw e.gattError("characteristic discovery")
        case .readByTypeResponse(let r):
            let end = walk.end
            for entry in r.entries {
                // Properties (1), value handle (2), UUID (2 or 16). Core 5.4, Vol 3, Part G, 3.3.1.
                guard entry.value.count == 5 || entry.value.count == 19 else {
                    throw GATTError(.malformedResponse, "characteristic declaration at \(entry.handle): \(entry.value.count) bytes")
                }
                let valueHandle = AttributeHandle(rawValue: UInt16(entry.value[1]) | UInt16(entry.value[2]) << 8)
                guard valueHandle > entry.handle, valueHandle <= end else {
                    throw GATTError(.malformedResponse, "characteristic declaration at \(entry.handle): value handle \(valueHandle)")
                }
                guard let type = try? BluetoothUUID(littleEndian: Array(entry.value[3...])) else {
                    throw GATTError(.malformedResponse, "characteristic declaration at \(entry.handle): UUID")
                }
                found.append(GATTCharacteristic(uuid: type, properties: GATTCharacteristicProperties(rawValue: entry.value[0]),
                                                declarationHandle: entry.handle, valueHandle: valueHandle, endHandle: end))
            }
            // Each declaration spans up to its value: the next one cannot start before (this also ends the walk when
            // a value takes the range's last handle).
            let more = try walk.advance(past: found.suffix(r.entries.count).map { ($0.declarationHandle, $0.valueHandle) },
                                        "characteristic discovery")
            // A declaration is followed immediately by its value (Core 5.4, Vol 3, Part G, 3.3.2), so one more needs
            // two handles: when only the range's last handle is left (the last value's descriptor, if anything), no
            // declaration fits and the walk is over without asking.
            return more && walk.start < walk.end ? .request(nextRequest) : .finished(result())
        default:
            throw GATTError(.malformedResponse, "characteristic discovery: \(response.opcode)")
        }
    }

    /// The characteristics with their end handles, filtered by UUID (the walk made sure each value handle is below
    /// the next declaration).
    private func result() -> [GATTCharacteristic] {
        var list = found
        for i in list.indices.dropLast() {
            list[i].endHandle = list[i + 1].declarationHandle.previous ?? list[i].valueHandle
        }
        return uuid.map { u in list.filter { $0.uuid == u } } ?? list
    }
}

/// Descriptor discovery of one characteristic (Find Information over the handles after its value).
/// Core 5.4, Vol 3, Part G, 4.7.1.
public struct DescriptorDiscovery: GATTProcedure {
    private var walk: HandleWalk?
    private var found: [GATTDescriptor] = []

    /// Discovers the descriptors in `range`.
    public init(in range: ClosedRange<AttributeHandle>?) {
        walk = range.map(HandleWalk.init)
    }

    /// Discovers the descriptors of `characteristic` (none when its value is its last handle).
    public init(of characteristic: GATTCharacteristic) {
        self.init(in: characteristic.descriptorRange)
    }

    public mutating func start() throws(GATTError) -> GATTProcedureStep<[GATTDescriptor]> {
        guard let walk else { return .finished([]) }
        return .request(.findInformationRequest(.init(range: walk.range)))
    }

    public mutating func receive(_ response: ATTPDU) throws(GATTError) -> GATTProcedureStep<[GATTDescriptor]> {
        guard var walk else { throw GATTError(.malformedResponse, "descriptor discovery: nothing was asked") }
        switch response {
        case .errorResponse(let e) where e.error == .attributeNotFound:
            return .finished(found)
        case .errorResponse(let e):
            throw e.gattError("descriptor discovery")
        case .findInformationResponse(let r):
            found += r.entries.map { GATTDescriptor(uuid: $0.type, handle: $0.handle) }
            let more = try walk.advance(past: r.entries.map { ($0.handle, $0.handle) }, "descriptor discovery")
            self.walk = walk
            return more ? .request(.findInformationRequest(.init(range: walk.range))) : .finished(found)
        default:
            throw GATTError(.malformedResponse, "descriptor discovery: \(response.opcode)")
        }
    }
}

/// Included service discovery (Read By Type of Include declarations); a 128-bit included service's UUID is read
/// from its declaration. Core 5.4, Vol 3, Part G, 4.5.1.
public struct IncludedServiceDiscovery: GATTProcedure {
    private var walk: HandleWalk
    private var more = true
    private var found: [GATTService] = []
    /// Included services whose 128-bit UUID is still to be read.
    private var unnamed = FIFO<GATTService>()
    private var reading: GATTService?

    /// Discovers the services `service` includes.
    public init(of service: GATTService) {
        walk = HandleWalk(service.range)
    }

    public mutating func start() throws(GATTError) -> GATTProcedureStep<[GATTService]> { .request(nextRequest) }

    private var nextRequest: ATTPDU { .readByTypeRequest(.init(range: walk.range, type: 0x2802)) }

    private mutating func next() -> GATTProcedureStep<[GATTService]> {
        if let service = unnamed.popFirst() {
            reading = service
            return .request(.readRequest(.init(handle: service.startHandle)))
        }
        return more ? .request(nextRequest) : .finished(found)
    }

    public mutating func receive(_ response: ATTPDU) throws(GATTError) -> GATTProcedureStep<[GATTService]> {
        if var service = reading {
            reading = nil
            guard case .readResponse(let r) = response else {
                if case .errorResponse(let e) = response { throw e.gattError("included service declaration") }
                throw GATTError(.malformedResponse, "included service declaration: \(response.opcode)")
            }
            // A service declaration's value is its UUID.
            guard r.value.count == 16, let uuid = try? BluetoothUUID(littleEndian: r.value) else {
                throw GATTError(.malformedResponse, "included service declaration at \(service.startHandle): \(r.value.count) bytes")
            }
            service.uuid = uuid
            found.append(service)
            return next()
        }
        switch response {
        case .errorResponse(let e) where e.error == .attributeNotFound:
            more = false
            return next()
        case .errorResponse(let e):
            throw e.gattError("included service discovery")
        case .readByTypeResponse(let r):
            for entry in r.entries {
                // Start (2), end (2), and a 16-bit UUID (2) when it has one. Core 5.4, Vol 3, Part G, 3.2.
                guard entry.value.count == 4 || entry.value.count == 6 else {
                    throw GATTError(.malformedResponse, "include declaration at \(entry.handle): \(entry.value.count) bytes")
                }
                let start = AttributeHandle(rawValue: UInt16(entry.value[0]) | UInt16(entry.value[1]) << 8)
                let end = AttributeHandle(rawValue: UInt16(entry.value[2]) | UInt16(entry.value[3]) << 8)
                guard start != 0, end >= start else {
                    throw GATTError(.malformedResponse, "include declaration at \(entry.handle): range \(start)–\(end)")
                }
                if entry.value.count == 6 {
                    found.append(GATTService(uuid: BluetoothUUID(UInt16(entry.value[4]) | UInt16(entry.value[5]) << 8), isPrimary: false,
                                             startHandle: start, endHandle: end))
                } else {
                    unnamed.append(GATTService(uuid: BluetoothUUID(0), isPrimary: false, startHandle: start, endHandle: end))
                }
            }
            more = try walk.advance(past: r.entries.map { ($0.handle, $0.handle) }, "included service discovery")
            return next()
        default:
            throw GATTError(.malformedResponse, "included service discovery: \(response.opcode)")
        }
    }
}
