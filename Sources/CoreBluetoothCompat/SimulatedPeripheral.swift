import BLE
import BLEHost
import BLEVirtualController
import Foundation
import Synchronization

/// A peripheral in a ``SimulatedWorld``: a device the test declares — its name, what it advertises, its services
/// with their values — and drives: its distance (RSSI, out of range), its power, its values, what it answers to reads
/// and writes. It runs the real stack's peripheral role on a virtual controller of its own.
///
/// Every characteristic value is answered by the peripheral itself: from the value it holds (the one it was declared
/// with, the last one written or set with ``setValue(_:for:)``), or by the closure a test gave with
/// ``onRead(_:_:)`` or ``onWrite(_:_:)``, which may fail the request with an ATT error:
///
/// ```swift
/// monitor.onRead(CBUUID(string: "2A38")) { _ in .failure(CBATTError(.insufficientResources)) }
/// // The app's peripheral(_:didUpdateValueFor:error:) gets CBATTError with code .insufficientResources.
/// ```
public final class SimulatedPeripheral: Sendable {
    /// What a read of a characteristic answers: its value, or an ATT error (`CBATTError(.readNotPermitted)`, or an
    /// application error, `CBATTError(attCode: 0x80)`).
    public typealias ReadHandler = @Sendable (CBCentral) -> Result<Data, CBATTError>
    /// What a write of a characteristic answers: success (the written bytes become its value), or an ATT error (the
    /// value stays).
    public typealias WriteHandler = @Sendable (CBCentral, Data) -> Result<Void, CBATTError>
    /// Told when a central subscribes to (`true`) or unsubscribes from (`false`) a characteristic.
    public typealias SubscriptionHandler = @Sendable (CBCentral, Bool) -> Void

    /// The name it advertises and serves as its GAP Device Name.
    public let name: String
    private let advertisedServices: [CBUUID]
    private let advertisingInterval: Duration
    private let supervisionTimeout: Duration?
    private let connectionInterval: Duration?
    private let preferredMTU: Int?
    private let requiringAuthentication: Set<CBUUID>
    /// Its bonds: kept across ``powerOff()`` and ``powerOn()``, as a device keeps them in flash, until
    /// ``forgetBonds()``.
    private let bondStore = InMemoryBondStore()
    private let state: Mutex<State>

    private struct State {
        var controller: VirtualController?
        var manager: PeripheralManager?
        var distance: Double = 1
        var tasks: [Task<Void, Never>] = []
        var parameterUpdates = 0
        var lastConnectionInterval: Duration?
        var air: VirtualAir?
        var address: BluetoothAddress?
        /// The services it serves (its firmware's, then those ``addService(_:)`` and ``removeService(_:)`` changed).
        var services: [CBMutableService]
        /// The value of each characteristic, by UUID.
        var values: [CBUUID: Data] = [:]
        var readHandlers: [CBUUID: ReadHandler] = [:]
        var writeHandlers: [CBUUID: WriteHandler] = [:]
        var subscriptionHandlers: [CBUUID: SubscriptionHandler] = [:]
    }

    /// Declares a peripheral `distance` metres from the origin (where the managers' controllers are) that advertises
    /// `name` and `advertising` every `advertisingInterval`, connectable, and serves `services`: `CBMutableService`s
    /// whose characteristics are `CBMutableCharacteristic`s; a characteristic's `value` is its initial value (any
    /// characteristic may have one, writable or not), and its `permissions` say who may read and write it
    /// (`readEncryptionRequired`, `writeEncryptionRequired`: an encrypted link, which a central gets by pairing, Just
    /// Works, or with its bond). The characteristics in `requiringAuthentication` need an authenticated link
    /// (pairing protected against a man in the middle) to be read or written.
    ///
    /// It asks each central that connects for its connection parameters (L2CAP Connection Parameter Update Request)
    /// when it has a `supervisionTimeout` (100 ms to 32 s; 4 s when only an interval is given), as a device that wants
    /// to be found lost only late does, or a `connectionInterval` (7.5 ms to 4 s; 30 to 50 ms when only a timeout is
    /// given), as a device that saves power or wants its data fast does. `preferredMTU` (23 to 517) is the ATT MTU it
    /// offers when a central exchanges MTUs (the stack's default, 517, when `nil`): the app's
    /// `maximumWriteValueLength(for:)` follows from it.
    public init(name: String, distance: Double = 1, advertising: [CBUUID] = [], services: [CBMutableService] = [],
                advertisingInterval: Duration = .milliseconds(100), supervisionTimeout: Duration? = nil,
                connectionInterval: Duration? = nil, preferredMTU: Int? = nil, requiringAuthentication: Set<CBUUID> = []) {
        self.name = name
        self.advertisedServices = advertising
        self.advertisingInterval = advertisingInterval
        self.supervisionTimeout = supervisionTimeout
        self.connectionInterval = connectionInterval
        self.preferredMTU = preferredMTU.map { min(517, max(23, $0)) }
        self.requiringAuthentication = requiringAuthentication
        var initial = State(services: services)
        initial.distance = distance
        for service in services { initial.values.merge(Self.initialValues(of: service)) { old, _ in old } }
        state = Mutex(initial)
    }

    private static func initialValues(of service: CBMutableService) -> [CBUUID: Data] {
        var values: [CBUUID: Data] = [:]
        for characteristic in service.characteristics ?? [] where values[characteristic.uuid] == nil {
            if let value = characteristic.value { values[characteristic.uuid] = value }
        }
        return values
    }

    func start(on air: VirtualAir) async throws {
        try await boot(on: air, address: nil)
    }

    /// Puts the device on `air`: a controller (with `address`, or the one the air gives), the peripheral role on it,
    /// its services, its answers to requests, its request for a supervision timeout, and advertising.
    private func boot(on air: VirtualAir, address: BluetoothAddress?) async throws {
        let (distance, services) = state.withLock { ($0.distance, $0.services) }
        let controller = air.addController(.init(address: address, position: Position(x: distance)))
        var configuration = HCIHost.Configuration()
        configuration.security = SecurityConfiguration(bondStore: bondStore)
        let host = HCIHost(transport: controller.makeHostTransport(), configuration: configuration)
        try await host.powerOn()
        if let preferredMTU { await GATTEngine(host: host, preferredMTU: preferredMTU).start() }
        let manager = await PeripheralManager(adapter: Adapter(host: host), deviceName: name)
        for service in services { try await manager.add(try service.simulatedDefinition(requiringAuthentication: requiringAuthentication)) }
        // The peripheral answers for every characteristic value (they are published with `source: .application`);
        // its stream is open before anyone can connect.
        let requests = await manager.requests()
        var tasks = [Task { [weak self] in
            for await request in requests {
                guard let self else { return }
                await self.handle(request, manager: manager)
            }
        }]
        if let (interval, timeout) = requestedParameters {
            let events = await manager.centralEvents()
            tasks.append(Task { [manager, weak self] in
                for await event in events {
                    guard case .connected(let central) = event else { continue }
                    if let link = try? await manager.requestConnectionParameters(interval: interval, latency: 0,
                                                                                   supervisionTimeout: timeout, for: central) {
                        self?.state.withLock {
                            $0.parameterUpdates += 1
                            $0.lastConnectionInterval = .microseconds(Int(link.interval) * 1250)
                        }
                    }
                }
            })
        }
        state.withLock {
            $0.air = air
            $0.address = controller.address
            $0.controller = controller
            $0.manager = manager
            $0.tasks = tasks
        }
        try await startAdvertising()
    }

    /// The connection parameters it asks for, in the units of the request (1.25 ms and 10 ms), within what the Core
    /// Specification allows (an interval of 7.5 ms to 4 s, a timeout of 100 ms to 32 s and longer than two
    /// intervals); `nil` when it asks for none.
    private var requestedParameters: (interval: ClosedRange<UInt16>, timeout: UInt16)? {
        guard supervisionTimeout != nil || connectionInterval != nil else { return nil }
        var interval: ClosedRange<UInt16> = 24...40
        if let connectionInterval {
            let units = UInt16(max(6, min(3200, Self.milliseconds(connectionInterval) * 4 / 5)))
            interval = units...units
        }
        let asked = supervisionTimeout.map { Self.milliseconds($0) / 10 } ?? 400
        // Longer than two of the longest intervals (Core 5.4, Vol 6, Part B, 4.5.2), in 10 ms units.
        let shortest = Int(interval.upperBound) * 125 * 2 / 1000 + 1
        return (interval, UInt16(max(10, min(3200, max(asked, shortest)))))
    }

    /// A duration in whole milliseconds, at least 0 and at most a day (no overflow whatever the duration).
    private static func milliseconds(_ duration: Duration) -> Int {
        let (seconds, attoseconds) = duration.components
        guard seconds >= 0 else { return 0 }
        return Int(min(seconds, 86_400)) * 1000 + Int(max(attoseconds, 0) / 1_000_000_000_000_000)
    }

    private func startAdvertising() async throws {
        guard let manager = state.withLock({ $0.manager }) else { return }
        let data = AdvertisingData(flags: .leOnlyGeneralDiscoverable, localName: name,
                                   serviceUUIDs: advertisedServices.map(\.bluetoothUUID))
        try await manager.startAdvertising(Advertisement(data: data, interval: advertisingInterval, kind: .connectable),
                                           restartAfterConnection: true)
    }

    // MARK: Answers

    /// Answers reads of `characteristic` with `handler` from now on (each read request: a long read makes several,
    /// each answered from its offset), instead of with the value it holds. A failure is sent as that ATT error: the
    /// app's `peripheral(_:didUpdateValueFor:error:)` gets a ``CBATTError`` with its code. `nil` goes back to the
    /// value.
    public func onRead(_ characteristic: CBUUID, _ handler: ReadHandler?) {
        state.withLock { $0.readHandlers[characteristic] = handler }
    }

    /// Answers writes of `characteristic` with `handler` from now on: on success the written bytes become its value
    /// (what a later read answers) and the writer's `didWriteValueFor` has no error; a failure is sent as that ATT
    /// error (a write without response is then only dropped). `nil` goes back to accepting every write.
    public func onWrite(_ characteristic: CBUUID, _ handler: WriteHandler?) {
        state.withLock { $0.writeHandlers[characteristic] = handler }
    }

    /// Calls `handler` when a central subscribes to or unsubscribes from `characteristic` (a central whose link
    /// goes down is reported unsubscribed); `nil` stops.
    public func onSubscribe(_ characteristic: CBUUID, _ handler: SubscriptionHandler?) {
        state.withLock { $0.subscriptionHandlers[characteristic] = handler }
    }

    /// The value `characteristic` holds now: the one it was declared with, or the last one written or set.
    public func value(of characteristic: CBUUID) -> Data? {
        state.withLock { $0.values[characteristic] }
    }

    private func handle(_ request: PeripheralRequest, manager: PeripheralManager) async {
        switch request.kind {
        case .application(let asked):
            guard let uuid = asked.characteristic.map({ CBUUID($0) }) else {
                await asked.refuse(.attributeNotFound)
                return
            }
            let central = CBCentral(connection: asked.central,
                                    maximumUpdateValueLength: await manager.maximumUpdateValueLength(for: asked.central))
            switch asked.kind {
            case .read(let offset):
                let (handler, stored) = state.withLock { ($0.readHandlers[uuid], $0.values[uuid]) }
                switch handler?(central) ?? .success(stored ?? Data()) {
                case .success(let value):
                    guard offset <= value.count else {
                        await asked.refuse(.invalidOffset)
                        return
                    }
                    await asked.respond(with: Array(value.dropFirst(offset)))
                case .failure(let error):
                    await asked.refuse(ATTErrorCode(rawValue: error.rawCode))
                }
            case .write(let bytes, _):
                await write(Data(bytes), to: uuid, from: central, request: asked)
            case .preparedWrites(let parts):
                // The parts of one characteristic, applied in order to its value as the central's long write does.
                var value = state.withLock { $0.values[uuid] } ?? Data()
                for part in parts {
                    let offset = Int(part.offset)
                    guard part.handle == asked.handle, offset <= value.count else {
                        await asked.refuse(part.handle == asked.handle ? .invalidOffset : .requestNotSupported)
                        return
                    }
                    value.replaceSubrange(offset..<min(value.count, offset + part.value.count), with: part.value)
                }
                await write(value, to: uuid, from: central, request: asked)
            }
        case .subscription(let characteristic, _, let notify, let indicate):
            guard let uuid = characteristic.map({ CBUUID($0) }),
                  let handler = state.withLock({ $0.subscriptionHandlers[uuid] }) else { return }
            let central = CBCentral(connection: request.central,
                                    maximumUpdateValueLength: await manager.maximumUpdateValueLength(for: request.central))
            handler(central, notify || indicate)
        case .write, .mtuChanged:
            break
        }
    }

    private func write(_ value: Data, to uuid: CBUUID, from central: CBCentral, request: AttributeRequest) async {
        let handler = state.withLock { $0.writeHandlers[uuid] }
        switch handler?(central, value) ?? .success(()) {
        case .success:
            state.withLock { $0.values[uuid] = value }
            await request.accept()
        case .failure(let error):
            await request.refuse(ATTErrorCode(rawValue: error.rawCode))
        }
    }

    // MARK: Driving it

    /// How many connections took the connection parameters it asks for (the `supervisionTimeout` and
    /// `connectionInterval` it was declared with).
    public var connectionParameterUpdates: Int { state.withLock { $0.parameterUpdates } }

    /// The connection interval its last link got after its request (the central decides), `nil` before any.
    public var lastConnectionInterval: Duration? { state.withLock { $0.lastConnectionInterval } }

    /// Forgets its bonds, as a device reset to factory settings (or whose user deleted the pairing) does: a central
    /// that bonded with it asks to encrypt with its key and is refused (PIN or Key Missing), and the app's request
    /// that needed encryption fails with ``CBError/Code/peerRemovedPairingInformation``, as on iOS. Returns how many
    /// bonds it forgot.
    @discardableResult
    public func forgetBonds() async throws -> Int {
        guard let manager = state.withLock({ $0.manager }) else { return 0 }
        var forgotten = 0
        for bond in try await manager.adapter.bonds() {
            if try await manager.adapter.removeBond(bond.peer) { forgotten += 1 }
        }
        return forgotten
    }

    /// Adds `service` to its database, as a firmware update does: the centrals connected and subscribed to Service
    /// Changed (iOS subscribes by itself) hear of it, and the app gets `peripheral(_:didModifyServices:)`. The
    /// service stays across a power cycle.
    public func addService(_ service: CBMutableService) async throws {
        let definition = try service.simulatedDefinition(requiringAuthentication: requiringAuthentication)
        let manager = state.withLock { state in
            state.services.append(service)
            state.values.merge(Self.initialValues(of: service)) { old, _ in old }
            return state.manager
        }
        try await manager?.add(definition)
    }

    /// Removes the service of type `uuid` from its database; the centrals subscribed to Service Changed hear of it,
    /// and the app gets `peripheral(_:didModifyServices:)` with that service among the invalidated ones.
    public func removeService(_ uuid: CBUUID) async throws {
        let manager = state.withLock { state in
            if let index = state.services.firstIndex(where: { $0.uuid == uuid }) { state.services.remove(at: index) }
            return state.manager
        }
        try await manager?.remove(uuid.bluetoothUUID)
    }

    /// How far it is from the managers' controllers, in metres. Moving it changes the RSSI they measure; far enough
    /// (the radio model's sensitivity), nothing is heard: links are lost at their supervision timeout.
    public var distance: Double { state.withLock { $0.distance } }

    /// Moves it to `distance` metres from the origin.
    public func move(toDistance distance: Double) {
        let controller = state.withLock { state in
            state.distance = distance
            return state.controller
        }
        controller?.position = Position(x: distance)
    }

    /// Turns it off, as a device whose power is cut: its radio leaves the air at once, so it stops advertising and
    /// each central loses its link at the link's supervision timeout (Connection Timeout), hearing nothing before.
    public func powerOff() async {
        let (controller, manager, tasks) = state.withLock { state in
            defer {
                state.controller = nil
                state.manager = nil
                state.tasks = []
            }
            return (state.controller, state.manager, state.tasks)
        }
        for task in tasks { task.cancel() }
        controller?.remove()
        await manager?.powerOff()
    }

    /// Turns it back on after ``powerOff()``, as the same device: the same address, the same services and values,
    /// advertising again.
    public func powerOn() async throws {
        let (air, controller, address) = state.withLock { ($0.air, $0.controller, $0.address) }
        guard let air, controller == nil else { return }
        try await boot(on: air, address: address)
    }

    /// Sets the value of `characteristic` (what reads answer from now on, unless ``onRead(_:_:)`` answers them) and
    /// notifies (or indicates) the centrals that subscribed to it; returns how many were sent it.
    @discardableResult
    public func setValue(_ value: Data, for characteristic: CBUUID) async throws -> Int {
        let manager = state.withLock { state in
            state.values[characteristic] = value
            return state.manager
        }
        guard let manager else { return 0 }
        return try await manager.updateValue(Array(value), for: characteristic.bluetoothUUID).count
    }
}

extension CBMutableService {
    /// The service as a ``SimulatedPeripheral`` publishes it: its characteristics must be `CBMutableCharacteristic`
    /// objects; every value is answered by the simulated peripheral (`source: .application`), so a characteristic
    /// may have a value and be writable.
    func simulatedDefinition(requiringAuthentication: Set<CBUUID> = []) throws(CBError) -> GATTServiceDefinition {
        let definitions = try (characteristics ?? []).map { characteristic throws(CBError) -> GATTCharacteristicDefinition in
            guard let mutable = characteristic as? CBMutableCharacteristic else {
                throw CBError(.invalidParameters, reason: "characteristics of a simulated service must be CBMutableCharacteristic objects")
            }
            let permissions = mutable.permissions
            var gattPermissions: GATTPermissions = []
            if permissions.contains(.readable) || permissions.contains(.readEncryptionRequired) { gattPermissions.insert(.readable) }
            if permissions.contains(.writeable) || permissions.contains(.writeEncryptionRequired) { gattPermissions.insert(.writeable) }
            if permissions.contains(.readEncryptionRequired) { gattPermissions.insert(.readEncryptionRequired) }
            if permissions.contains(.writeEncryptionRequired) { gattPermissions.insert(.writeEncryptionRequired) }
            if requiringAuthentication.contains(mutable.uuid) {
                gattPermissions.formUnion([.readAuthenticationRequired, .writeAuthenticationRequired])
            }
            var descriptors: [GATTDescriptorDefinition] = []
            for descriptor in mutable.descriptors ?? [] {
                guard let published = descriptor as? CBMutableDescriptor else {
                    throw CBError(.invalidParameters, reason: "descriptors of a simulated characteristic must be CBMutableDescriptor objects")
                }
                descriptors.append(try published.definition())
            }
            return GATTCharacteristicDefinition(uuid: mutable.uuid.bluetoothUUID, properties: GATTCharacteristicProperties(mutable.properties),
                                                permissions: gattPermissions, descriptors: descriptors, source: .application)
        }
        return GATTServiceDefinition(uuid: uuid.bluetoothUUID, isPrimary: isPrimary, characteristics: definitions)
    }
}
