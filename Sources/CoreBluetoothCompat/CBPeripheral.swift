import BLE
import Foundation

/// What a peripheral tells its delegate, as CoreBluetooth's `CBPeripheralDelegate`. Every method has a default
/// implementation that does nothing: a delegate implements those it needs (a near miss of one is caught as
/// ``CBDelegateDiagnostics`` describes).
///
/// An `error` is a ``CBATTError`` when the peripheral answered with an ATT error (its code is the ATT code), a
/// ``CBError`` otherwise (``CBError/Code/notConnected`` for a call made while the peripheral is not connected,
/// ``CBError/Code/peripheralDisconnected`` when the link dropped during the operation).
///
/// It refines `NSObjectProtocol`, as CoreBluetooth's does: a delegate is an `NSObject` subclass, as on iOS.
public protocol CBPeripheralDelegate: NSObjectProtocol {
    /// ``CBPeripheral/discoverServices(_:)`` finished: ``CBPeripheral/services`` holds what was found.
    func peripheral(_ peripheral: CBPeripheral, didDiscoverServices error: (any Error)?)
    /// ``CBPeripheral/discoverIncludedServices(_:for:)`` finished: ``CBService/includedServices`` is set.
    func peripheral(_ peripheral: CBPeripheral, didDiscoverIncludedServicesFor service: CBService, error: (any Error)?)
    /// ``CBPeripheral/discoverCharacteristics(_:for:)`` finished: ``CBService/characteristics`` is set.
    func peripheral(_ peripheral: CBPeripheral, didDiscoverCharacteristicsFor service: CBService, error: (any Error)?)
    /// ``CBPeripheral/discoverDescriptors(for:)`` finished: ``CBCharacteristic/descriptors`` is set.
    func peripheral(_ peripheral: CBPeripheral, didDiscoverDescriptorsFor characteristic: CBCharacteristic, error: (any Error)?)
    /// A characteristic's ``CBCharacteristic/value`` was read, or notified or indicated.
    func peripheral(_ peripheral: CBPeripheral, didUpdateValueFor characteristic: CBCharacteristic, error: (any Error)?)
    /// A descriptor's ``CBDescriptor/value`` was read.
    func peripheral(_ peripheral: CBPeripheral, didUpdateValueFor descriptor: CBDescriptor, error: (any Error)?)
    /// A write with response (``CBCharacteristicWriteType/withResponse``) was answered; each write gets its own call,
    /// in the order of the writes.
    func peripheral(_ peripheral: CBPeripheral, didWriteValueFor characteristic: CBCharacteristic, error: (any Error)?)
    /// A descriptor write (``CBPeripheral/writeValue(_:for:)``) was answered.
    func peripheral(_ peripheral: CBPeripheral, didWriteValueFor descriptor: CBDescriptor, error: (any Error)?)
    /// ``CBPeripheral/setNotifyValue(_:for:)`` finished: ``CBCharacteristic/isNotifying`` is set.
    func peripheral(_ peripheral: CBPeripheral, didUpdateNotificationStateFor characteristic: CBCharacteristic, error: (any Error)?)
    /// ``CBPeripheral/readRSSI()`` finished, with the link's RSSI in dBm.
    func peripheral(_ peripheral: CBPeripheral, didReadRSSI RSSI: NSNumber, error: (any Error)?)
    /// macOS before 10.13: ``CBPeripheral/rssi`` was updated. Never called: ``CBPeripheral/readRSSI()`` answers with
    /// ``peripheral(_:didReadRSSI:error:)``, as iOS 8 and later do.
    @available(*, deprecated, renamed: "peripheral(_:didReadRSSI:error:)")
    func peripheralDidUpdateRSSI(_ peripheral: CBPeripheral, error: (any Error)?)
    /// The peripheral's database changed (a Service Changed indication): `invalidatedServices` were removed from
    /// ``CBPeripheral/services``; discover them again to see what is there now.
    func peripheral(_ peripheral: CBPeripheral, didModifyServices invalidatedServices: [CBService])
    /// The peripheral's advertised name changed.
    func peripheralDidUpdateName(_ peripheral: CBPeripheral)
    /// ``CBPeripheral/canSendWriteWithoutResponse`` was `false` and is `true` again.
    func peripheralIsReady(toSendWriteWithoutResponse peripheral: CBPeripheral)
    /// A channel asked for with ``CBPeripheral/openL2CAPChannel(_:)`` is open, or could not be (`error`).
    func peripheral(_ peripheral: CBPeripheral, didOpen channel: CBL2CAPChannel?, error: (any Error)?)
}

extension CBPeripheralDelegate {
    /// Does nothing but report the dropped event (see ``CBDelegateDiagnostics``).
    public func peripheral(_ peripheral: CBPeripheral, didDiscoverServices error: (any Error)?) {
        CBDelegateDiagnostics.unhandled("peripheral(_:didDiscoverServices:)", of: self, protocol: "CBPeripheralDelegate", asked: "discoverServices(_:)")
    }
    /// Does nothing but report the dropped event (see ``CBDelegateDiagnostics``).
    public func peripheral(_ peripheral: CBPeripheral, didDiscoverIncludedServicesFor service: CBService, error: (any Error)?) {
        CBDelegateDiagnostics.unhandled("peripheral(_:didDiscoverIncludedServicesFor:error:)", of: self, protocol: "CBPeripheralDelegate", asked: "discoverIncludedServices(_:for:)")
    }
    /// Does nothing but report the dropped event (see ``CBDelegateDiagnostics``).
    public func peripheral(_ peripheral: CBPeripheral, didDiscoverCharacteristicsFor service: CBService, error: (any Error)?) {
        CBDelegateDiagnostics.unhandled("peripheral(_:didDiscoverCharacteristicsFor:error:)", of: self, protocol: "CBPeripheralDelegate", asked: "discoverCharacteristics(_:for:)")
    }
    /// Does nothing but report the dropped event (see ``CBDelegateDiagnostics``).
    public func peripheral(_ peripheral: CBPeripheral, didDiscoverDescriptorsFor characteristic: CBCharacteristic, error: (any Error)?) {
        CBDelegateDiagnostics.unhandled("peripheral(_:didDiscoverDescriptorsFor:error:)", of: self, protocol: "CBPeripheralDelegate", asked: "discoverDescriptors(for:)")
    }
    /// Does nothing but report the dropped event (see ``CBDelegateDiagnostics``).
    public func peripheral(_ peripheral: CBPeripheral, didUpdateValueFor characteristic: CBCharacteristic, error: (any Error)?) {
        CBDelegateDiagnostics.unhandled("peripheral(_:didUpdateValueFor:error:)", of: self, protocol: "CBPeripheralDelegate", asked: "readValue(for:) or setNotifyValue(_:for:)")
    }
    /// Does nothing but report the dropped event (see ``CBDelegateDiagnostics``).
    public func peripheral(_ peripheral: CBPeripheral, didUpdateValueFor descriptor: CBDescriptor, error: (any Error)?) {
        CBDelegateDiagnostics.unhandled("peripheral(_:didUpdateValueFor:error:) (descriptor)", of: self, protocol: "CBPeripheralDelegate", asked: "readValue(for:) of a descriptor")
    }
    /// Does nothing.
    public func peripheral(_ peripheral: CBPeripheral, didWriteValueFor characteristic: CBCharacteristic, error: (any Error)?) {}
    /// Does nothing.
    public func peripheral(_ peripheral: CBPeripheral, didWriteValueFor descriptor: CBDescriptor, error: (any Error)?) {}
    /// Does nothing.
    public func peripheral(_ peripheral: CBPeripheral, didUpdateNotificationStateFor characteristic: CBCharacteristic, error: (any Error)?) {}
    /// Does nothing (never called).
    @available(*, deprecated, renamed: "peripheral(_:didReadRSSI:error:)")
    public func peripheralDidUpdateRSSI(_ peripheral: CBPeripheral, error: (any Error)?) {}
    /// Does nothing but report the dropped event (see ``CBDelegateDiagnostics``).
    public func peripheral(_ peripheral: CBPeripheral, didReadRSSI RSSI: NSNumber, error: (any Error)?) {
        CBDelegateDiagnostics.unhandled("peripheral(_:didReadRSSI:error:)", of: self, protocol: "CBPeripheralDelegate", asked: "readRSSI()")
    }
    /// Does nothing.
    public func peripheral(_ peripheral: CBPeripheral, didModifyServices invalidatedServices: [CBService]) {}
    /// Does nothing.
    public func peripheralDidUpdateName(_ peripheral: CBPeripheral) {}
    /// Does nothing.
    public func peripheralIsReady(toSendWriteWithoutResponse peripheral: CBPeripheral) {}
    /// Does nothing but report the dropped event (see ``CBDelegateDiagnostics``).
    public func peripheral(_ peripheral: CBPeripheral, didOpen channel: CBL2CAPChannel?, error: (any Error)?) {
        CBDelegateDiagnostics.unhandled("peripheral(_:didOpen:error:)", of: self, protocol: "CBPeripheralDelegate", asked: "openL2CAPChannel(_:)")
    }
}

/// A remote peripheral, as CoreBluetooth's `CBPeripheral`: one object per device for its manager's lifetime, the
/// same object in every callback and after reconnecting.
///
/// Its methods return at once; each outcome comes as a ``CBPeripheralDelegate`` callback on the manager's queue.
/// Operations run one after another, in the order they were called (so writes with response are answered in order).
public final class CBPeripheral: CBPeer, @unchecked Sendable {
    private struct State {
        weak var delegate: (any CBPeripheralDelegate)?
        weak var manager: CBCentralManager?
        var name: String?
        /// The address the device was last heard from (a bonded private device's changes with each rotation).
        var heardAddress: LEAddress
        var state: CBPeripheralState = .disconnected
        var remote: RemotePeripheral?
        /// Bumped by each connection attempt and each cancellation: an attempt that is no longer current is dropped.
        var attempt = 0
        /// This central asked to disconnect: the disconnection is reported with a `nil` error.
        var cancelRequested = false
        /// The connection was made with ``CBConnectPeripheralOptionEnableAutoReconnect``.
        var autoReconnect = false
        /// The current attempt is an automatic reconnection (a failed one is made again).
        var reconnecting = false
        var services: [CBService]?
        var maximumWriteWithoutResponse = 20
        /// The RSSI of the last ``readRSSI()`` that succeeded.
        var rssi: NSNumber?
        /// Writes without response queued and not yet handed to the controller.
        var pendingWritesWithoutResponse = 0
        /// The L2CAP channels opened to the device, while their application holds them.
        var channels: [WeakPipe] = []
    }

    struct WeakPipe {
        weak var pipe: ChannelPipe?
    }

    /// The longest ``CBCentralManagerDelegate/centralManager(_:didConnect:)`` waits, in the link's time, for the MTU
    /// exchange begun on connecting.
    static let mtuWait: Duration = .seconds(1)

    /// How many writes without response may wait for the controller before ``canSendWriteWithoutResponse`` turns
    /// `false`.
    public static let writeWithoutResponseQueueCapacity = 8

    private let protected: Locked<State>
    private let operations = OrderedOperations()
    /// The device as this manager first knew it: its identity address when a bond already resolved its private
    /// address, the address it advertised from otherwise (a device paired later stays this object, also found under
    /// its identity). The ``identifier`` is made from it.
    let identity: LEAddress

    /// The address to reach the device at: the one it was last heard from.
    var address: LEAddress { protected.withLock { $0.heardAddress } }

    init(manager: CBCentralManager, identity: LEAddress, heardAt address: LEAddress? = nil, name: String?) {
        self.identity = identity
        var state = State(heardAddress: address ?? identity)
        state.manager = manager
        state.name = name
        protected = Locked(state)
        super.init(identifier: CBPeer.identifier(for: identity))
    }

    /// The device was heard at `address` (a bonded private device from its latest resolvable private address).
    func heard(at address: LEAddress) { protected.withLock { $0.heardAddress = address } }

    deinit { operations.finish() }

    /// The object the events go to (held weakly).
    public var delegate: (any CBPeripheralDelegate)? {
        get { protected.withLock { $0.delegate } }
        set { protected.withLock { $0.delegate = newValue } }
    }

    /// The name the peripheral advertised (its latest advertisement's local name), or `nil`.
    public var name: String? { protected.withLock { $0.name } }

    /// The connection state.
    public var state: CBPeripheralState { protected.withLock { $0.state } }

    /// The services discovered so far (`nil` before ``discoverServices(_:)`` succeeded).
    public var services: [CBService]? { protected.withLock { $0.services } }

    /// The identifier's string (the address appears in its last group).
    public override var description: String { "CBPeripheral \(identifier.uuidString) \(name ?? "(no name)") \(state)" }

    func advertisedName(_ name: String) {
        let changed = protected.withLock { state in
            defer { state.name = name }
            return state.name != nil && state.name != name
        }
        if changed { manager?.deliver { _ in self.delegate?.peripheralDidUpdateName(self) } }
    }

    /// Whether a write without response would go out without waiting: `false` while
    /// ``writeWithoutResponseQueueCapacity`` such writes wait for the controller's buffers. Writing anyway is safe
    /// (the write is queued, never dropped); ``CBPeripheralDelegate/peripheralIsReady(toSendWriteWithoutResponse:)``
    /// follows when it turns `true` again.
    public var canSendWriteWithoutResponse: Bool {
        protected.withLock { $0.state == .connected && $0.pendingWritesWithoutResponse < Self.writeWithoutResponseQueueCapacity }
    }

    /// The RSSI in dBm of the last ``readRSSI()`` that succeeded (`nil` before), as before iOS 8.
    @available(*, deprecated, message: "use readRSSI() and peripheral(_:didReadRSSI:error:)")
    public var rssi: NSNumber? { protected.withLock { $0.rssi } }

    /// Whether the user authorized Apple's Notification Center Service for this peripheral: always `false` on
    /// Linux, which has no ANCS (``CBCentralManagerDelegate/centralManager(_:didUpdateANCSAuthorizationFor:)`` is never
    /// called).
    public var ancsAuthorized: Bool { false }

    private var manager: CBCentralManager? { protected.withLock { $0.manager } }

    // MARK: Connection (driven by the manager)

    /// Starts a connection attempt; returns its number, or `nil` when the peripheral is not disconnected.
    func beginConnecting(autoReconnect: Bool = false) -> Int? {
        protected.withLock { state in
            guard state.state == .disconnected else { return nil }
            state.state = .connecting
            state.attempt += 1
            state.cancelRequested = false
            state.autoReconnect = autoReconnect
            state.reconnecting = false
            return state.attempt
        }
    }

    /// Makes connection attempt `attempt` and reports its outcome, unless it was cancelled meanwhile.
    func connect(attempt: Int, using central: Central, manager: CBCentralManager) async {
        guard protected.withLock({ $0.attempt == attempt && $0.state == .connecting }) else { return }
        let remote: RemotePeripheral
        do {
            remote = try await central.connect(address, name: name, timeout: CBCentralManager.connectionAttemptTimeout)
        } catch {
            // An automatic reconnection is made again while the controller is on, after a pause, until it succeeds
            // or the application cancels it.
            let retry = protected.withLock { state in
                state.attempt == attempt && state.state == .connecting && state.reconnecting
            }
            if retry, manager.state == .poweredOn {
                Task { [weak self, weak manager] in
                    try? await Task.sleep(for: .seconds(1))
                    guard let self, let manager,
                          self.protected.withLock({ $0.attempt == attempt && $0.state == .connecting }) else { return }
                    manager.makeAttempt(attempt, to: self)
                }
                return
            }
            let current = protected.withLock { state in
                guard state.attempt == attempt, state.state == .connecting else { return false }
                state.state = .disconnected
                return true
            }
            if current {
                let reported = cbError(error)
                manager.deliver { m in m.delegate?.centralManager(m, didFailToConnect: self, error: reported) }
            }
            return
        }
        // The MTU exchange started on connecting usually settles within a connection event or two: didConnect waits
        // for it (apps read maximumWriteValueLength there), but at most a second of the link's time, so that a peer
        // without ATT (an L2CAP-only device, a Linux host serving no GATT) is connected at once, not after the 30 s ATT
        // timeout; a later settlement updates the maximum.
        let maximum = ATT.maximumWriteValueLength(mtu: await remote.mtu(waitingAtMost: Self.mtuWait))
        let current = protected.withLock { state in
            guard state.attempt == attempt, state.state == .connecting else { return false }
            state.state = .connected
            state.remote = remote
            state.maximumWriteWithoutResponse = maximum
            return true
        }
        guard current else {
            // Cancelled while the attempt was under way: the link is not wanted.
            _ = try? await central.disconnect(remote)
            return
        }
        let states = await remote.stateUpdates()
        manager.deliver { m in m.delegate?.centralManager(m, didConnect: self) }
        Task { [weak self] in
            let settled = ATT.maximumWriteValueLength(mtu: await remote.mtu)
            self?.protected.withLock { state in
                if state.remote === remote { state.maximumWriteWithoutResponse = settled }
            }
        }
        Task { [weak self] in
            for await state in states {
                guard case .disconnected(let reason) = state else { continue }
                self?.linkEnded(remote, reason: reason)
                return
            }
        }
        // As iOS does, the central subscribes to Service Changed; a peripheral without it simply has no changes.
        Task { [weak self] in
            guard let changes = try? await remote.servicesChanged() else { return }
            for await range in changes { self?.servicesChanged(range, on: remote) }
        }
    }

    /// Drops the services overlapping `range` and reports them to the delegate.
    private func servicesChanged(_ range: ClosedRange<AttributeHandle>, on remote: RemotePeripheral) {
        manager?.deliver { _ in
            let invalidated = self.protected.withLock { state -> [CBService]? in
                guard state.remote === remote else { return nil }
                let invalidated = (state.services ?? []).filter { $0.gatt.range.overlaps(range) }
                state.services = state.services?.filter { !$0.gatt.range.overlaps(range) }
                return invalidated
            }
            guard let invalidated else { return }
            self.delegate?.peripheral(self, didModifyServices: invalidated)
        }
    }

    /// Marks the peripheral as disconnecting and returns its link, or abandons a pending attempt (returning `nil`).
    /// Returns once what the application wrote on its channels to the device so far went out (and a channel whose
    /// streams it closed is closed, its bytes delivered): a disconnection waits for it.
    func channelsSettled() async {
        let pipes = protected.withLock { $0.channels.compactMap(\.pipe) }
        for pipe in pipes { await pipe.settled() }
    }

    func beginDisconnecting() -> RemotePeripheral? {
        protected.withLock { state in
            switch state.state {
            case .connecting:
                state.attempt += 1
                state.state = .disconnected
                return nil
            case .connected:
                state.cancelRequested = true
                state.state = .disconnecting
                return state.remote
            case .disconnecting, .disconnected:
                return nil
            }
        }
    }

    private func linkEnded(_ remote: RemotePeripheral, reason: HCIStatus) {
        let timestamp = Date().timeIntervalSinceReferenceDate
        let ended = protected.withLock { state -> (ours: Bool, reconnection: Int?)? in
            guard state.remote === remote else { return nil }
            state.remote = nil
            guard !state.cancelRequested, state.autoReconnect else {
                state.state = .disconnected
                return (state.cancelRequested, nil)
            }
            // Reconnecting by itself, as iOS 17 does for ``CBConnectPeripheralOptionEnableAutoReconnect``.
            state.state = .connecting
            state.attempt += 1
            state.reconnecting = true
            return (false, state.attempt)
        }
        guard let (ours, reconnection) = ended, let manager else { return }
        let error: CBError? = ours ? nil : reason == .connectionTimeout
            ? CBError(.connectionTimeout, reason: "the link timed out (\(reason))")
            : CBError(.peripheralDisconnected, reason: "the peripheral disconnected (\(reason))")
        manager.deliver { m in
            for service in self.services ?? [] {
                for characteristic in service.characteristics ?? [] { characteristic.stopNotifying() }
            }
            m.delegate?.centralManager(m, didDisconnectPeripheral: self, timestamp: timestamp,
                                       isReconnecting: reconnection != nil, error: error)
            // The reconnection starts once the delegate heard of the loss, as on iOS: during the callback the
            // peripheral is `connecting`, whatever the load (a reconnection begun before could already be up).
            if let reconnection { m.makeAttempt(reconnection, to: self) }
        }
    }

    // MARK: Operations

    /// Runs `work` on the link after the operations before it, then `then` on the delegate queue with its outcome
    /// (``CBError/Code/notConnected`` when there is no link).
    private func run<T: Sendable>(_ work: @escaping @Sendable (RemotePeripheral) async throws -> T,
                                  then: @escaping @Sendable (CBPeripheral, Result<T, any Error>) -> Void) {
        operations.submit { [weak self] in
            guard let self, let manager = self.manager else { return }
            let result: Result<T, any Error>
            if let remote = self.protected.withLock({ $0.remote }) {
                do { result = .success(try await work(remote)) } catch { result = .failure(cbError(error)) }
            } else {
                result = .failure(CBError(.notConnected, reason: "the peripheral is not connected"))
            }
            manager.deliver { _ in then(self, result) }
        }
    }

    /// Discovers the peripheral's primary services (all, or those in `serviceUUIDs`); then
    /// ``CBPeripheralDelegate/peripheral(_:didDiscoverServices:)``. Services found before keep their objects.
    public func discoverServices(_ serviceUUIDs: [CBUUID]?) {
        let uuids = serviceUUIDs?.map(\.bluetoothUUID)
        run({ try await $0.discoverServices(uuids) }) { peripheral, result in
            if case .success(let found) = result { peripheral.merge(found) }
            peripheral.delegate?.peripheral(peripheral, didDiscoverServices: result.error)
        }
    }

    private func merge(_ found: [GATTService]) {
        protected.withLock { state in
            var byHandle: [AttributeHandle: CBService] = [:]
            for service in state.services ?? [] { byHandle[service.gatt.startHandle] = service }
            for service in found where byHandle[service.startHandle]?.gatt != service {
                byHandle[service.startHandle] = CBService(peripheral: self, gatt: service)
            }
            state.services = byHandle.values.sorted { $0.gatt.startHandle < $1.gatt.startHandle }
        }
    }

    /// Discovers the services `service` includes (all, or those in `includedServiceUUIDs`); then
    /// ``CBPeripheralDelegate/peripheral(_:didDiscoverIncludedServicesFor:error:)``.
    public func discoverIncludedServices(_ includedServiceUUIDs: [CBUUID]?, for service: CBService) {
        let uuids = includedServiceUUIDs?.map(\.bluetoothUUID)
        let gatt = service.gatt
        run({ try await $0.discoverIncludedServices(for: gatt) }) { peripheral, result in
            if case .success(let found) = result {
                service.setIncludedServices(found.filter { uuids?.contains($0.uuid) ?? true }
                    .map { CBService(peripheral: peripheral, gatt: $0) })
            }
            peripheral.delegate?.peripheral(peripheral, didDiscoverIncludedServicesFor: service, error: result.error)
        }
    }

    /// Discovers the characteristics of `service` (all, or those in `characteristicUUIDs`); then
    /// ``CBPeripheralDelegate/peripheral(_:didDiscoverCharacteristicsFor:error:)``.
    public func discoverCharacteristics(_ characteristicUUIDs: [CBUUID]?, for service: CBService) {
        let uuids = characteristicUUIDs?.map(\.bluetoothUUID)
        let gatt = service.gatt
        run({ try await $0.discoverCharacteristics(uuids, for: gatt) }) { peripheral, result in
            if case .success(let found) = result { service.merge(found) }
            peripheral.delegate?.peripheral(peripheral, didDiscoverCharacteristicsFor: service, error: result.error)
        }
    }

    /// Discovers the descriptors of `characteristic`; then
    /// ``CBPeripheralDelegate/peripheral(_:didDiscoverDescriptorsFor:error:)``.
    public func discoverDescriptors(for characteristic: CBCharacteristic) {
        let gatt = characteristic.gatt
        run({ try await $0.discoverDescriptors(for: gatt) }) { peripheral, result in
            if case .success(let found) = result { characteristic.merge(found) }
            peripheral.delegate?.peripheral(peripheral, didDiscoverDescriptorsFor: characteristic, error: result.error)
        }
    }

    /// Reads a characteristic's value (a long value whole); then
    /// `peripheral(_:didUpdateValueFor:error:)` with
    /// ``CBCharacteristic/value`` set.
    public func readValue(for characteristic: CBCharacteristic) {
        let gatt = characteristic.gatt
        run({ try await $0.readValue(for: gatt) }) { peripheral, result in
            if case .success(let value) = result { characteristic.setValue(Data(value)) }
            peripheral.delegate?.peripheral(peripheral, didUpdateValueFor: characteristic, error: result.error)
        }
    }

    /// Reads a descriptor's value; then
    /// `peripheral(_:didUpdateValueFor:error:)` with ``CBDescriptor/value``
    /// set.
    public func readValue(for descriptor: CBDescriptor) {
        let gatt = descriptor.gatt
        run({ try await $0.readValue(for: gatt) }) { peripheral, result in
            if case .success(let value) = result { descriptor.setValue(value) }
            peripheral.delegate?.peripheral(peripheral, didUpdateValueFor: descriptor, error: result.error)
        }
    }

    /// Writes a characteristic's value. A write ``CBCharacteristicWriteType/withResponse`` is answered by its own
    /// `peripheral(_:didWriteValueFor:error:)` call, in the order of the writes (values
    /// longer than ATT_MTU − 3, up to 512 bytes, go as prepared writes); a write
    /// ``CBCharacteristicWriteType/withoutResponse`` is not answered.
    public func writeValue(_ data: Data, for characteristic: CBCharacteristic, type: CBCharacteristicWriteType) {
        let gatt = characteristic.gatt
        let bytes = [UInt8](data)
        let writeType = type.writeType
        if type == .withoutResponse { protected.withLock { $0.pendingWritesWithoutResponse += 1 } }
        run({ try await $0.writeValue(bytes, for: gatt, type: writeType) }) { peripheral, result in
            guard type == .withResponse else {
                // Ready again when the queue leaves its capacity (whether or not a write was tried while full).
                let ready = peripheral.protected.withLock { state in
                    let wasFull = state.pendingWritesWithoutResponse >= Self.writeWithoutResponseQueueCapacity
                    state.pendingWritesWithoutResponse -= 1
                    return wasFull && state.pendingWritesWithoutResponse < Self.writeWithoutResponseQueueCapacity
                }
                if ready { peripheral.delegate?.peripheralIsReady(toSendWriteWithoutResponse: peripheral) }
                return
            }
            peripheral.delegate?.peripheral(peripheral, didWriteValueFor: characteristic, error: result.error)
        }
    }

    /// Writes a descriptor's value (a Write Request); then
    /// `peripheral(_:didWriteValueFor:error:)` (the descriptor variant). As in CoreBluetooth, the
    /// Client Characteristic Configuration descriptor is not written this way (use ``setNotifyValue(_:for:)``): such a
    /// write is answered with ``CBError/Code/operationNotSupported`` (where CoreBluetooth raises an exception).
    public func writeValue(_ data: Data, for descriptor: CBDescriptor) {
        let gatt = descriptor.gatt
        let bytes = [UInt8](data)
        guard gatt.uuid != .clientCharacteristicConfiguration else {
            manager?.deliver { _ in
                self.delegate?.peripheral(self, didWriteValueFor: descriptor, error: CBError(
                    .operationNotSupported, reason: "the Client Characteristic Configuration descriptor is written by setNotifyValue(_:for:)"))
            }
            return
        }
        run({ remote in try await remote.writeValue(bytes, for: gatt) }) { peripheral, result in
            peripheral.delegate?.peripheral(peripheral, didWriteValueFor: descriptor, error: result.error)
        }
    }

    /// Subscribes to a characteristic's notifications (or indications, when it only indicates), or ends the
    /// subscription; then ``CBPeripheralDelegate/peripheral(_:didUpdateNotificationStateFor:error:)``. While
    /// subscribed, each value arrives as `peripheral(_:didUpdateValueFor:error:)`.
    /// A characteristic that can neither notify nor indicate gets the callback with a ``CBATTError`` (request not
    /// supported).
    public func setNotifyValue(_ enabled: Bool, for characteristic: CBCharacteristic) {
        let gatt = characteristic.gatt
        if enabled {
            run({ (remote: RemotePeripheral) async throws -> NotificationStream? in
                // Already subscribed: the state is confirmed, values keep coming through the existing stream.
                guard characteristic.claimSubscription() else { return nil }
                do {
                    return try await remote.notifications(for: gatt)
                } catch {
                    characteristic.releaseSubscription()
                    throw error
                }
            }) { peripheral, result in
                if case .success(let values?) = result { characteristic.startNotifying(values, peripheral: peripheral) }
                peripheral.delegate?.peripheral(peripheral, didUpdateNotificationStateFor: characteristic, error: result.error)
            }
        } else {
            run({
                try await $0.stopNotifications(for: gatt)
                characteristic.releaseSubscription()
            }) { peripheral, result in
                if case .success = result { characteristic.stopNotifying() }
                peripheral.delegate?.peripheral(peripheral, didUpdateNotificationStateFor: characteristic, error: result.error)
            }
        }
    }

    /// Delivers a notified value on the delegate queue.
    func notified(_ value: [UInt8], for characteristic: CBCharacteristic) {
        manager?.deliver { _ in
            guard characteristic.isNotifying else { return }
            characteristic.setValue(Data(value))
            self.delegate?.peripheral(self, didUpdateValueFor: characteristic, error: nil)
        }
    }

    /// Opens an LE credit based L2CAP channel to the peripheral's `PSM` (one it published, or a SIG-assigned one);
    /// then ``CBPeripheralDelegate/peripheral(_:didOpen:error:)``. A PSM that needs encryption makes the central pair
    /// first.
    public func openL2CAPChannel(_ PSM: CBL2CAPPSM) {
        let queue = manager?.delegateQueue ?? .main
        run({ try await $0.openL2CAPChannel(L2CAPSPSM(rawValue: PSM)) }) { peripheral, result in
            let channel = (try? result.get()).map { CBL2CAPChannel($0, peer: peripheral, psm: PSM, deliveringOn: queue) }
            if let channel {
                peripheral.protected.withLock { state in
                    state.channels.removeAll { $0.pipe == nil }
                    state.channels.append(WeakPipe(pipe: channel.pipe))
                }
            }
            peripheral.delegate?.peripheral(peripheral, didOpen: channel, error: result.error)
        }
    }

    /// Reads the link's RSSI; then ``CBPeripheralDelegate/peripheral(_:didReadRSSI:error:)``.
    public func readRSSI() {
        run({ try await $0.readRSSI() }) { peripheral, result in
            let rssi = (try? result.get()) ?? 0
            if case .success(let value) = result { peripheral.protected.withLock { $0.rssi = NSNumber(value: value) } }
            peripheral.delegate?.peripheral(peripheral, didReadRSSI: NSNumber(value: rssi), error: result.error)
        }
    }

    /// The longest value one write of `type` takes: 512 bytes with response (longer than ATT_MTU − 3 goes as
    /// prepared writes), ATT_MTU − 3 without (the MTU exchanged right after connecting).
    public func maximumWriteValueLength(for type: CBCharacteristicWriteType) -> Int {
        switch type {
        case .withResponse: 512
        case .withoutResponse: protected.withLock { $0.maximumWriteWithoutResponse }
        }
    }
}

extension Result {
    /// The failure, or `nil`.
    var error: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
