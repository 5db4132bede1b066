import BLE
import BLEHost
import BLEWire
import Foundation

/// The peripheral role with CoreBluetooth's names and semantics: publish services, advertise, answer centrals' reads
/// and writes, push values to subscribers.
///
/// Callbacks arrive on the queue given at creation (the main queue when it is `nil`), in the order the events
/// happened, one at a time, never from inside a call the application makes. Every request is attributed to the
/// ``CBCentral`` that sent it; several centrals may be connected at once (advertising goes on while they are).
///
/// The controller is chosen as for ``CBCentralManager`` (`CBManager.setController(_:)`, else `SWIFT_BLE_HCI`, else
/// the embedded simulated world); on the embedded world each manager has a controller of its own, on a real
/// controller or TCP port the process's managers share one host.
public final class CBPeripheralManager: CBManager, @unchecked Sendable {
    private struct State {
        weak var delegate: (any CBPeripheralManagerDelegate)?
        var state: CBManagerState = .unknown
        var isAdvertising = false
        /// The published services, in the order they were added.
        var services: [CBMutableService] = []
        /// Published characteristics by value handle.
        var characteristics: [AttributeHandle: CBMutableCharacteristic] = [:]
        /// The connected centrals by link.
        var centrals: [LinkID: CBCentral] = [:]
        /// Updates queued and not yet handed to the stack.
        var pendingUpdates = 0
        /// An update was refused for a full queue: tell the delegate when there is room.
        var owesReadiness = false
        var tasks: [Task<Void, Never>] = []
        var published: [CBL2CAPPSM] = []
    }

    /// How many value updates may wait for the stack before ``updateValue(_:for:onSubscribedCentrals:)`` returns
    /// `false`.
    public static let updateQueueCapacity = 8

    private let protected = Locked(State())
    let delegateQueue: DispatchQueue
    /// The stack's peripheral manager, once its controller is open.
    let manager: Task<PeripheralManager, Never>
    /// The controller chosen at creation.
    let controllerChoice: Result<HCITransportSpec, TransportError>
    /// The manager's operations, in the order the application asked for them.
    private let operations = OrderedOperations()

    /// Creates a peripheral manager and opens its controller;
    /// ``CBPeripheralManagerDelegate/peripheralManagerDidUpdateState(_:)`` follows with the state it reached.
    ///
    /// - Parameters:
    ///   - delegate: receives the events (held weakly).
    ///   - queue: where the callbacks run; `nil` means the main queue (a command-line program must then run it, with
    ///     `dispatchMain()` or `RunLoop.main.run()`).
    ///   - options: CoreBluetooth's initialization options; none has an effect on Linux.
    public init(delegate: (any CBPeripheralManagerDelegate)?, queue: DispatchQueue?, options: [String: Any]? = nil) {
        delegateQueue = makeDelegateQueue("CoreBluetoothCompat.CBPeripheralManager", target: queue)
        let controller = Self.controller()
        controllerChoice = controller
        let security = Self.security()
        SimulatedWorld.current?.adapterRequested()
        manager = Task { await PeripheralManager(adapter: await CBManager.openAdapter(controller, security: security)) }
        super.init()
        protected.withLock { $0.delegate = delegate }
        let opening = manager
        // Requests, subscriptions and centrals are followed from the start, in the order the stack reports them.
        let task = Task { [weak self] in
            let manager = await opening.value
            let states = await manager.adapter.events()
            let centrals = await manager.centralEvents()
            let requests = await manager.requests()
            await withTaskGroup(of: Void.self) { group in
                group.addTask { [weak self] in
                    for await event in states {
                        guard let self else { return }
                        if case .stateChanged(let state) = event { self.adapterStateChanged(CBManagerState(state)) }
                    }
                }
                group.addTask { [weak self] in
                    for await event in centrals {
                        guard let self else { return }
                        await self.centralEvent(event, manager: manager)
                    }
                }
                group.addTask { [weak self] in
                    for await request in requests {
                        guard let self else { return }
                        self.peripheralRequest(request)
                    }
                }
            }
        }
        protected.withLock { $0.tasks.append(task) }
    }

    /// Creates a manager without a delegate, delivering on the main queue.
    public override convenience init() {
        self.init(delegate: nil, queue: nil, options: nil)
    }

    deinit {
        let tasks = protected.withLock { $0.tasks }
        for task in tasks { task.cancel() }
        operations.finish()
        let opening = manager
        let choice = controllerChoice
        Task { await CBManager.closeAdapter(opening.value.adapter, choice: choice) }
    }

    /// The object the events go to (held weakly).
    public var delegate: (any CBPeripheralManagerDelegate)? {
        get { protected.withLock { $0.delegate } }
        set { protected.withLock { $0.delegate = newValue } }
    }

    /// The adapter's state, as last reported to the delegate (`unknown` until the controller is up).
    public override var state: CBManagerState { protected.withLock { $0.state } }

    /// Whether the manager advertises: `true` from a successful ``startAdvertising(_:)`` until ``stopAdvertising()``.
    public var isAdvertising: Bool { protected.withLock { $0.isAdvertising } }

    /// Runs `body` on the delegate queue, after the callbacks already queued.
    func deliver(_ body: @escaping @Sendable (CBPeripheralManager) -> Void) {
        delegateQueue.async { body(self) }
    }

    private func adapterStateChanged(_ new: CBManagerState) {
        deliver { manager in
            let changed = manager.protected.withLock { state in
                guard state.state != new else { return false }
                state.state = new
                if new != .poweredOn { state.isAdvertising = false }
                return true
            }
            guard changed, new != .unknown else { return }
            manager.delegate?.peripheralManagerDidUpdateState(manager)
        }
    }

    // MARK: Services

    /// Publishes a service (with its characteristics and descriptors); then
    /// ``CBPeripheralManagerDelegate/peripheralManager(_:didAdd:error:)``. Centrals connected and subscribed to
    /// Service Changed are told. A characteristic with a value must be read-only, and included services must be
    /// published first; otherwise the callback carries a ``CBError`` (`invalidParameters`). The GAP (0x1800) and GATT
    /// (0x1801) services are the system's: adding one fails with `uuidNotAllowed`, as on iOS.
    public func add(_ service: CBMutableService) {
        let opening = manager
        operations.submit { [weak self] in
            guard let self else { return }
            let manager = await opening.value
            let error: CBError?
            do {
                try await self.publish(service, on: manager)
                error = nil
            } catch let failure as CBError {
                error = failure
            } catch let other {
                error = CBError(.unknown, reason: "could not publish \(service.uuid.uuidString): \(other)")
            }
            self.deliver { m in m.delegate?.peripheralManager(m, didAdd: service, error: error) }
        }
    }

    /// The services the stack publishes itself: Generic Access (0x1800) and Generic Attribute (0x1801).
    static let systemServices: Set<BluetoothUUID> = [BluetoothUUID(0x1800), BluetoothUUID(0x1801)]

    private func publish(_ service: CBMutableService, on manager: PeripheralManager) async throws {
        guard service.gatt.startHandle == 0 else {
            throw CBError(.invalidParameters, reason: "service \(service.uuid.uuidString) is already published")
        }
        // The GAP and GATT services are the stack's own, one of each per database (Core Vol 3, Part C, 12 and Part G,
        // 7); iOS refuses them to apps in the same way.
        guard !Self.systemServices.contains(service.uuid.bluetoothUUID) else {
            throw CBError(.uuidNotAllowed, reason: "service \(service.uuid.uuidString) is provided by the system")
        }
        let characteristics = try (service.characteristics ?? []).map { characteristic throws(CBError) -> CBMutableCharacteristic in
            guard let mutable = characteristic as? CBMutableCharacteristic else {
                throw CBError(.invalidParameters, reason: "characteristics of a published service must be CBMutableCharacteristic objects")
            }
            return mutable
        }
        let definitions = try characteristics.map { characteristic throws(CBError) in try characteristic.definition() }
        let database = await manager.database
        let starts = database.services.map(\.start)
        var included: [Int] = []
        for other in service.includedServices ?? [] {
            guard let index = starts.firstIndex(of: other.gatt.startHandle), other.gatt.startHandle != 0 else {
                throw CBError(.invalidParameters, reason: "included service \(other.uuid.uuidString) must be published first")
            }
            included.append(index)
        }
        let range = try await manager.add(GATTServiceDefinition(uuid: service.uuid.bluetoothUUID, isPrimary: service.isPrimary,
                                                                characteristics: definitions, includedServices: included))
        service.published(range)
        // Give each object the handles the database assigned, walking the service's attributes in order.
        let attributes = Array(await manager.database.attributes(in: range))
        var byValueHandle: [AttributeHandle: CBMutableCharacteristic] = [:]
        var next = characteristics.makeIterator()
        var current: CBMutableCharacteristic?
        var declaration: AttributeHandle = 0
        var pendingDescriptors: [CBMutableDescriptor] = []
        for (index, attribute) in attributes.enumerated() {
            switch attribute.role {
            case .characteristicDeclaration:
                declaration = attribute.handle
            case .characteristicValue:
                guard let characteristic = next.next() else { break }
                current = characteristic
                // The characteristic ends before the next declaration, or with the service.
                let end = attributes[(index + 1)...].first { if case .characteristicDeclaration = $0.role { true } else { false } }
                    .flatMap { $0.handle.previous } ?? range.upperBound
                characteristic.published(in: service, declaration: declaration, value: attribute.handle, end: end)
                byValueHandle[attribute.handle] = characteristic
                pendingDescriptors = (characteristic.descriptors ?? []).compactMap { $0 as? CBMutableDescriptor }
            case .descriptor:
                if let match = pendingDescriptors.firstIndex(where: { $0.uuid.bluetoothUUID == attribute.type }) {
                    pendingDescriptors.remove(at: match).published(in: current, handle: attribute.handle)
                }
            default:
                break
            }
        }
        protected.withLock { state in
            state.services.append(service)
            state.characteristics.merge(byValueHandle) { _, new in new }
        }
    }

    /// Removes a published service; centrals subscribed to Service Changed are told. (CoreBluetooth gives no
    /// callback for it.)
    public func remove(_ service: CBMutableService) {
        let opening = manager
        operations.submit { [weak self] in
            guard let self else { return }
            await self.unpublish(service, on: await opening.value)
        }
    }

    /// Removes every published service.
    public func removeAllServices() {
        let opening = manager
        let services = protected.withLock { $0.services }
        operations.submit { [weak self] in
            guard let self else { return }
            let manager = await opening.value
            for service in services.reversed() { await self.unpublish(service, on: manager) }
        }
    }

    private func unpublish(_ service: CBMutableService, on manager: PeripheralManager) async {
        let start = service.gatt.startHandle
        guard start != 0 else { return }
        try? await manager.removeService(startingAt: start)
        service.published(nil)
        let characteristics = (service.characteristics ?? []).compactMap { $0 as? CBMutableCharacteristic }
        for characteristic in characteristics {
            characteristic.clearSubscriptions()
            characteristic.published(in: nil, declaration: 0, value: 0, end: 0)
        }
        protected.withLock { state in
            state.services.removeAll { $0 === service }
            state.characteristics = state.characteristics.filter { _, c in !characteristics.contains { $0 === c } }
        }
    }

    // MARK: Advertising

    /// Starts advertising, connectable, with the local name (``CBAdvertisementDataLocalNameKey``) and service UUIDs
    /// (``CBAdvertisementDataServiceUUIDsKey``) of `advertisementData`, the only keys CoreBluetooth accepts here. When
    /// both do not fit in the 31-byte advertising packet, the name moves to the scan response (shortened if it must),
    /// and service UUIDs that do not fit either go to the scan response as incomplete lists, as iOS does (iOS keeps
    /// the rest in an "overflow area" only iOS scanners read; on Linux they are not advertised). Advertising goes on
    /// while centrals are connected. Then ``CBPeripheralManagerDelegate/peripheralManagerDidStartAdvertising(_:error:)``
    /// (``CBError/Code/alreadyAdvertising`` when it already is).
    public func startAdvertising(_ advertisementData: [String: Any]?) {
        let name = advertisementData?[CBAdvertisementDataLocalNameKey] as? String
        let uuids = (advertisementData?[CBAdvertisementDataServiceUUIDsKey] as? [CBUUID] ?? []).map(\.bluetoothUUID)
        let already = protected.withLock { state in
            defer { state.isAdvertising = true }
            return state.isAdvertising
        }
        if already {
            deliver { m in m.delegate?.peripheralManagerDidStartAdvertising(m, error: CBError(.alreadyAdvertising, reason: "already advertising")) }
            return
        }
        let opening = manager
        operations.submit { [weak self] in
            guard let self else { return }
            let manager = await opening.value
            let layout = Self.advertisingLayout(name: name, serviceUUIDs: uuids)
            var error: CBError?
            do {
                try await manager.startAdvertising(Advertisement(data: layout.data, scanResponse: layout.scanResponse, kind: .connectable),
                                                   restartAfterConnection: true)
            } catch let failure {
                self.protected.withLock { $0.isAdvertising = false }
                error = CBError(.unknown, reason: "could not start advertising: \(failure)")
            }
            let outcome = error
            self.deliver { m in m.delegate?.peripheralManagerDidStartAdvertising(m, error: outcome) }
        }
    }

    /// Stops advertising.
    public func stopAdvertising() {
        protected.withLock { $0.isAdvertising = false }
        let opening = manager
        operations.submit { try? await opening.value.stopAdvertising() }
    }

    /// The advertising data and scan response for a name and service UUIDs, laid out as ``startAdvertising(_:)``
    /// documents: BLE's one layout rule, `AdvertisingData.layout(name:serviceUUIDs:txPowerLevel:manufacturerData:)`.
    static func advertisingLayout(name: String?, serviceUUIDs: [BluetoothUUID]) -> (data: AdvertisingData, scanResponse: AdvertisingData) {
        AdvertisingData.layout(name: name, serviceUUIDs: serviceUUIDs)
    }

    // MARK: Centrals and requests

    private func central(for connection: HostConnection) -> CBCentral {
        protected.withLock { state in
            if let known = state.centrals[connection.link] { return known }
            let central = CBCentral(connection: connection, maximumUpdateValueLength: ATT.maximumNotificationValueLength(mtu: 23))
            state.centrals[connection.link] = central
            return central
        }
    }

    private func centralEvent(_ event: CentralEvent, manager: PeripheralManager) async {
        switch event {
        case .connected(let connection):
            let central = central(for: connection)
            central.setMaximumUpdateValueLength(await manager.maximumUpdateValueLength(for: connection))
        case .disconnected(let connection, _):
            // Its subscriptions end through the requests stream (reported unsubscribed); the object is kept until
            // then so those callbacks name the same central.
            deliver { m in _ = m.protected.withLock { $0.centrals.removeValue(forKey: connection.link) } }
        default:
            break
        }
    }

    private func peripheralRequest(_ request: PeripheralRequest) {
        switch request.kind {
        case .mtuChanged(let mtu):
            central(for: request.central).setMaximumUpdateValueLength(ATT.maximumNotificationValueLength(mtu: mtu))
        case .subscription(_, let handle, let notify, let indicate):
            let subscribed = notify || indicate
            // An unsubscription names the central object of the subscription (its link may be gone already).
            let central = subscribed ? central(for: request.central) : nil
            deliver { m in
                guard let characteristic = m.protected.withLock({ $0.characteristics[handle] }),
                      let changed = characteristic.subscription(of: central, on: request.central.link, subscribed: subscribed) else { return }
                if subscribed {
                    m.delegate?.peripheralManager(m, central: changed, didSubscribeTo: characteristic)
                } else {
                    m.delegate?.peripheralManager(m, central: changed, didUnsubscribeFrom: characteristic)
                }
            }
        case .application(let asked):
            attributeRequest(asked)
        case .write:
            // Writes of stored values: CoreBluetooth's valued characteristics are read-only, so none reaches here.
            break
        }
    }

    private func attributeRequest(_ request: AttributeRequest) {
        let central = central(for: request.central)
        let answer = PendingAnswer(request)
        let requests: [CBATTRequest]
        let isRead: Bool
        switch request.kind {
        case .read(let offset):
            guard let characteristic = protected.withLock({ $0.characteristics[request.handle] }) else {
                Task { await request.refuse(.unlikelyError) }
                return
            }
            requests = [CBATTRequest(central: central, characteristic: characteristic, offset: offset, value: nil, answer: answer)]
            isRead = true
        case .write(let value, let withResponse):
            guard let characteristic = protected.withLock({ $0.characteristics[request.handle] }) else {
                Task { await request.refuse(.unlikelyError) }
                return
            }
            requests = [CBATTRequest(central: central, characteristic: characteristic, offset: 0, value: Data(value), answer: answer)]
            isRead = false
            if !withResponse {
                // A write command has no answer: the stack's request is settled now, the delegate still sees it.
                _ = answer.claim()
                Task { await request.accept() }
            }
        case .preparedWrites(let parts):
            let characteristics = protected.withLock { state in parts.map { state.characteristics[$0.handle] } }
            var built: [CBATTRequest] = []
            for (part, characteristic) in zip(parts, characteristics) {
                guard let characteristic else {
                    Task { await request.refuse(.unlikelyError) }
                    return
                }
                built.append(CBATTRequest(central: central, characteristic: characteristic, offset: Int(part.offset),
                                          value: Data(part.value), answer: answer))
            }
            requests = built
            isRead = false
        }
        deliver { m in
            guard let delegate = m.delegate else {
                m.respond(to: requests[0], withResult: .unlikelyError)
                return
            }
            if isRead {
                delegate.peripheralManager(m, didReceiveRead: requests[0])
            } else {
                delegate.peripheralManager(m, didReceiveWrite: requests)
            }
        }
    }

    /// Answers a read or write request (for a batch of writes, the first request of the array): `.success` sends a
    /// read request's ``CBATTRequest/value`` or accepts the writes; another code refuses with that ATT error. A
    /// request is answered once; later calls for it, or for another request of its batch, are ignored.
    public func respond(to request: CBATTRequest, withResult result: CBATTError.Code) {
        guard request.answer.claim() else { return }
        let underlying = request.answer.request
        let value = request.value.map { [UInt8]($0) } ?? []
        operations.submit {
            switch (underlying.kind, result) {
            case (.read, .success): await underlying.respond(with: value)
            case (_, .success): await underlying.accept()
            default: await underlying.refuse(ATTErrorCode(rawValue: UInt8(truncatingIfNeeded: result.rawValue)))
            }
        }
    }

    // MARK: Updates

    /// Sends a new value of a published characteristic to its subscribed centrals (all, or those in `centrals`), as
    /// notifications or indications as each subscribed. Returns `false` without sending when
    /// ``updateQueueCapacity`` updates already wait for the stack;
    /// ``CBPeripheralManagerDelegate/peripheralManagerIsReady(toUpdateSubscribers:)`` follows when there is room.
    /// A value longer than a central's ``CBCentral/maximumUpdateValueLength`` does not reach that central.
    /// Returns `false` also for a characteristic that is not published.
    public func updateValue(_ value: Data, for characteristic: CBMutableCharacteristic, onSubscribedCentrals centrals: [CBCentral]?) -> Bool {
        let handle = characteristic.gatt.valueHandle
        guard handle != 0 else { return false }
        let accepted = protected.withLock { state in
            guard state.pendingUpdates < Self.updateQueueCapacity else {
                state.owesReadiness = true
                return false
            }
            state.pendingUpdates += 1
            return true
        }
        guard accepted else { return false }
        let bytes = [UInt8](value)
        let links = centrals?.map(\.connection)
        let opening = manager
        operations.submit { [weak self] in
            let manager = await opening.value
            if let links {
                for link in links { _ = try? await manager.updateValue(bytes, forValueHandle: handle, onSubscribedCentrals: [link]) }
            } else {
                _ = try? await manager.updateValue(bytes, forValueHandle: handle)
            }
            guard let self else { return }
            let ready = self.protected.withLock { state in
                state.pendingUpdates -= 1
                guard state.owesReadiness, state.pendingUpdates < Self.updateQueueCapacity else { return false }
                state.owesReadiness = false
                return true
            }
            if ready { self.deliver { m in m.delegate?.peripheralManagerIsReady(toUpdateSubscribers: m) } }
        }
        return true
    }

    /// Asks a central for connection parameters matching `latency` (an L2CAP Connection Parameter Update Request;
    /// the central decides). CoreBluetooth reports no outcome, nor does this.
    public func setDesiredConnectionLatency(_ latency: CBPeripheralManagerConnectionLatency, for central: CBCentral) {
        let opening = manager
        let connection = central.connection
        operations.submit {
            // BLE has no call for a peripheral's Connection Parameter Update Request: it is the host's, reached through BLEHost.
            try? await HCIHost.owned(by: opening.value.adapter).requestConnectionParameterUpdate(latency.parameters,
                                                                                                 on: connection)
        }
    }

    // MARK: L2CAP channels

    /// Publishes an LE credit based channel on a free dynamic PSM; then
    /// ``CBPeripheralManagerDelegate/peripheralManager(_:didPublishL2CAPChannel:error:)`` with the PSM (advertise it
    /// or serve it in a characteristic), and ``CBPeripheralManagerDelegate/peripheralManager(_:didOpen:error:)`` for
    /// each channel a central opens. With `encryptionRequired`, a central on an unencrypted link is refused until it
    /// pairs.
    public func publishL2CAPChannel(withEncryption encryptionRequired: Bool) {
        let opening = manager
        operations.submit { [weak self] in
            guard let self else { return }
            let manager = await opening.value
            do {
                let (psm, channels) = try await manager.publishL2CAPChannel(withEncryption: encryptionRequired)
                self.protected.withLock { $0.published.append(psm.rawValue) }
                self.deliver { m in m.delegate?.peripheralManager(m, didPublishL2CAPChannel: psm.rawValue, error: nil) }
                let task = Task { [weak self] in
                    for await channel in channels {
                        guard let self else { return }
                        let connection = await manager.connectedCentrals.first { $0.link == channel.link }
                        let peer: CBPeer = connection.map { self.central(for: $0) } ?? CBPeer(identifier: UUID())
                        let opened = CBL2CAPChannel(channel, peer: peer, psm: psm.rawValue, deliveringOn: self.delegateQueue)
                        self.deliver { m in m.delegate?.peripheralManager(m, didOpen: opened, error: nil) }
                    }
                }
                self.protected.withLock { $0.tasks.append(task) }
            } catch {
                self.deliver { m in
                    m.delegate?.peripheralManager(m, didPublishL2CAPChannel: 0, error: CBError(.unknown, reason: "could not publish a channel: \(error)"))
                }
            }
        }
    }

    /// Stops accepting channels on `PSM` (open channels stay open); then
    /// ``CBPeripheralManagerDelegate/peripheralManager(_:didUnpublishL2CAPChannel:error:)``.
    public func unpublishL2CAPChannel(_ PSM: CBL2CAPPSM) {
        let opening = manager
        operations.submit { [weak self] in
            guard let self else { return }
            let known = self.protected.withLock { state in
                guard let index = state.published.firstIndex(of: PSM) else { return false }
                state.published.remove(at: index)
                return true
            }
            if known { await opening.value.unpublishL2CAPChannel(L2CAPSPSM(rawValue: PSM)) }
            let error = known ? nil : CBError(.invalidParameters, reason: "PSM \(PSM) is not published")
            self.deliver { m in m.delegate?.peripheralManager(m, didUnpublishL2CAPChannel: PSM, error: error) }
        }
    }
}
