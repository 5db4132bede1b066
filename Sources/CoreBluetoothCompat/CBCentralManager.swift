import BLE
import Foundation
import Synchronization

/// What a central manager tells its delegate, as CoreBluetooth's `CBCentralManagerDelegate`.
///
/// ``centralManagerDidUpdateState(_:)`` is required; the other methods have default implementations that do
/// nothing, so a delegate implements those it needs, as with CoreBluetooth's optional methods. A method whose
/// signature nearly matches one of them would never be called: see ``CBDelegateDiagnostics``.
///
/// It refines `NSObjectProtocol`, as CoreBluetooth's does: a delegate is an `NSObject` subclass, as on iOS.
public protocol CBCentralManagerDelegate: NSObjectProtocol {
    /// The manager's ``CBCentralManager/state`` changed. Scan and connect once it is `poweredOn`.
    func centralManagerDidUpdateState(_ central: CBCentralManager)
    /// A scan found `peripheral`, advertising `advertisementData` (under the `CBAdvertisementData…Key` keys),
    /// received at `RSSI` dBm.
    func centralManager(_ central: CBCentralManager, didDiscover peripheral: CBPeripheral,
                        advertisementData: [String: Any], rssi RSSI: NSNumber)
    /// A connection requested with ``CBCentralManager/connect(_:options:)`` is up.
    func centralManager(_ central: CBCentralManager, didConnect peripheral: CBPeripheral)
    /// A connection requested with ``CBCentralManager/connect(_:options:)`` could not be made.
    func centralManager(_ central: CBCentralManager, didFailToConnect peripheral: CBPeripheral, error: (any Error)?)
    /// A peripheral's link ended: `error` is `nil` when this central cancelled it
    /// (``CBCentralManager/cancelPeripheralConnection(_:)``), a ``CBError`` otherwise.
    func centralManager(_ central: CBCentralManager, didDisconnectPeripheral peripheral: CBPeripheral, error: (any Error)?)
    /// A peripheral's link ended at `timestamp`, as iOS 17 reports it; `isReconnecting` says whether the manager
    /// reconnects by itself (the connection was made with ``CBConnectPeripheralOptionEnableAutoReconnect`` and this
    /// central did not cancel it). The manager calls this method for every disconnection; its default implementation
    /// calls ``centralManager(_:didDisconnectPeripheral:error:)``, so a delegate implements either, as on iOS.
    func centralManager(_ central: CBCentralManager, didDisconnectPeripheral peripheral: CBPeripheral,
                        timestamp: CFAbsoluteTime, isReconnecting: Bool, error: (any Error)?)
    /// iOS's state restoration hands back the managers' state after relaunching the app. Never called on Linux,
    /// where no system relaunches a program (``CBCentralManagerOptionRestoreIdentifierKey`` has no effect).
    func centralManager(_ central: CBCentralManager, willRestoreState dict: [String: Any])
    /// A link matching the options of ``CBCentralManager/registerForConnectionEvents(options:)`` came up or went
    /// down (on Linux, a link of this manager's controller in the central role, whoever made it).
    func centralManager(_ central: CBCentralManager, connectionEventDidOccur event: CBConnectionEvent,
                        for peripheral: CBPeripheral)
    /// iOS: the user's authorization of the Apple Notification Center Service for `peripheral` changed. Never called
    /// on Linux, which has no ANCS (``CBPeripheral/ancsAuthorized`` stays `false`).
    func centralManager(_ central: CBCentralManager, didUpdateANCSAuthorizationFor peripheral: CBPeripheral)
}

extension CBCentralManagerDelegate {
    /// Does nothing but report the dropped event (see ``CBDelegateDiagnostics``).
    public func centralManager(_ central: CBCentralManager, didDiscover peripheral: CBPeripheral,
                               advertisementData: [String: Any], rssi RSSI: NSNumber) {
        CBDelegateDiagnostics.unhandled("centralManager(_:didDiscover:advertisementData:rssi:)", of: self, protocol: "CBCentralManagerDelegate", asked: "scanForPeripherals(withServices:options:)")
    }
    /// Does nothing but report the dropped event (see ``CBDelegateDiagnostics``).
    public func centralManager(_ central: CBCentralManager, didConnect peripheral: CBPeripheral) {
        CBDelegateDiagnostics.unhandled("centralManager(_:didConnect:)", of: self, protocol: "CBCentralManagerDelegate", asked: "connect(_:options:)")
    }
    /// Does nothing.
    public func centralManager(_ central: CBCentralManager, didFailToConnect peripheral: CBPeripheral, error: (any Error)?) {}
    /// Does nothing.
    public func centralManager(_ central: CBCentralManager, didDisconnectPeripheral peripheral: CBPeripheral, error: (any Error)?) {}
    /// Calls ``centralManager(_:didDisconnectPeripheral:error:)`` (the delegate of iOS 16 and earlier).
    public func centralManager(_ central: CBCentralManager, didDisconnectPeripheral peripheral: CBPeripheral,
                               timestamp: CFAbsoluteTime, isReconnecting: Bool, error: (any Error)?) {
        centralManager(central, didDisconnectPeripheral: peripheral, error: error)
    }
    /// Does nothing (never called on Linux).
    public func centralManager(_ central: CBCentralManager, willRestoreState dict: [String: Any]) {}
    /// Does nothing but report the dropped event (see ``CBDelegateDiagnostics``).
    public func centralManager(_ central: CBCentralManager, connectionEventDidOccur event: CBConnectionEvent, for peripheral: CBPeripheral) {
        CBDelegateDiagnostics.unhandled("centralManager(_:connectionEventDidOccur:for:)", of: self, protocol: "CBCentralManagerDelegate",
                                        asked: "registerForConnectionEvents(options:)")
    }
    /// Does nothing (never called on Linux).
    public func centralManager(_ central: CBCentralManager, didUpdateANCSAuthorizationFor peripheral: CBPeripheral) {}
}

/// The central role with CoreBluetooth's names and semantics: scanning, connecting, and delegate callbacks.
///
/// An `NSObject` subclass, as in CoreBluetooth, so that code which compares managers with `isEqual`, stores them in
/// Foundation collections or subclasses `NSObject` around them compiles unchanged.
///
/// Callbacks arrive on the queue given at creation (the main queue when it is `nil`), in the order the events
/// happened, one at a time, and never from inside a call the application makes: every method returns at once and its
/// outcome comes later as a callback.
///
/// The controller is the one `CBManager.setController(_:)` named, else the one the environment variable `SWIFT_BLE_HCI`
/// names (the syntax of `ble --hci`: `virtual`, `hciN`, `tcp:HOST:PORT`, `serial:…`), else the process's embedded
/// simulated world (`EmbeddedWorld` of the BLE module) with every simulated device of `BLEProfiles`
/// (`EmbeddedDevices`: the lab device, the standard devices, "SwiftBLE Band", "SwiftBLE Piano", "SwiftBLE Scale"). On the
/// embedded world each manager opens a controller of its own; a real controller or TCP port is opened once per
/// process and shared by its managers.
public final class CBCentralManager: CBManager, @unchecked Sendable {
    private struct State {
        weak var delegate: (any CBCentralManagerDelegate)?
        var state: CBManagerState = .unknown
        var isScanning = false
        /// Bumped by every scan start and stop: a discovery of an older scan is not delivered.
        var scanGeneration = 0
        var scanTask: Task<Void, Never>?
        var peripherals: [LEAddress: CBPeripheral] = [:]
        var stateTask: Task<Void, Never>?
        /// The options of ``registerForConnectionEvents(options:)`` (`nil` until it is called), and its task.
        var connectionEventOptions: [CBConnectionEventMatchingOption: Any]?
        var connectionEventTask: Task<Void, Never>?
        /// Bluetooth is switched off in the manager's simulated world (``SimulatedWorld/turnBluetoothOff()``).
        var switchedOff = false
    }

    private let protected = Locked(State())
    /// The serial queue the delegate callbacks go through.
    let delegateQueue: DispatchQueue
    /// The stack's central, once its controller is open.
    let central: Task<Central, Never>
    /// The controller chosen at creation.
    let controllerChoice: Result<HCITransportSpec, TransportError>
    /// The central's operations, in the order the application asked for them.
    let operations = OrderedOperations()
    /// Connection attempts, one at a time (the controller initiates one connection at a time).
    let connections = OrderedOperations()

    /// Creates a central manager and opens its controller; ``CBCentralManagerDelegate/centralManagerDidUpdateState(_:)``
    /// follows with the state it reached.
    ///
    /// - Parameters:
    ///   - delegate: receives the events (held weakly).
    ///   - queue: where the callbacks run; `nil` means the main queue (a command-line program must then run it, with
    ///     `dispatchMain()` or `RunLoop.main.run()`).
    ///   - options: CoreBluetooth's initialization options, ``CBCentralManagerOptionShowPowerAlertKey`` and
    ///     ``CBCentralManagerOptionRestoreIdentifierKey``; neither has an effect on Linux (there is no power alert to
    ///     show and no state to restore).
    public init(delegate: (any CBCentralManagerDelegate)?, queue: DispatchQueue?, options: [String: Any]? = nil) {
        delegateQueue = makeDelegateQueue("CoreBluetoothCompat.CBCentralManager", target: queue)
        let controller = Self.controller()
        controllerChoice = controller
        let security = Self.security()
        SimulatedWorld.current?.adapterRequested()
        central = Task { Central(adapter: await CBManager.openAdapter(controller, security: security)) }
        super.init()
        let switchedOff = !(SimulatedWorld.current?.register(self) ?? true)
        protected.withLock {
            $0.delegate = delegate
            $0.switchedOff = switchedOff
        }
        let opening = central
        let task = Task { [weak self] in
            let updates = await opening.value.stateUpdates()
            for await state in updates {
                if state == .poweredOn {
                    // What `supports(_:)` answers: read before the delegate hears of the new state.
                    let capabilities = await opening.value.adapter.capabilities
                    CBCentralManager.supportedFeatures.withLock {
                        $0 = capabilities.supportsExtendedAdvertising ? .extendedScanAndConnect : []
                    }
                }
                guard let self else { return }
                self.adapterStateChanged(self.protected.withLock { $0.switchedOff } ? .poweredOff : CBManagerState(state))
            }
        }
        protected.withLock { $0.stateTask = task }
    }

    /// Bluetooth was switched off or on in the manager's simulated world: off, the state is `poweredOff` whatever
    /// the adapter's; on, it is the adapter's again.
    func bluetoothSwitched(on: Bool) {
        protected.withLock { $0.switchedOff = !on }
        guard on else {
            adapterStateChanged(.poweredOff)
            return
        }
        let opening = central
        Task { [weak self] in
            let state = await opening.value.state
            guard let self, !self.protected.withLock({ $0.switchedOff }) else { return }
            self.adapterStateChanged(CBManagerState(state))
        }
    }

    /// Whether Bluetooth is switched off in the manager's simulated world (calls that need the radio are ignored).
    private var isSwitchedOff: Bool { protected.withLock { $0.switchedOff } }

    /// Creates a manager without a delegate, delivering on the main queue.
    public override convenience init() {
        self.init(delegate: nil, queue: nil, options: nil)
    }

    deinit {
        let (stateTask, scanTask, eventTask) = protected.withLock { ($0.stateTask, $0.scanTask, $0.connectionEventTask) }
        stateTask?.cancel()
        scanTask?.cancel()
        eventTask?.cancel()
        operations.finish()
        connections.finish()
        let opening = central
        let choice = controllerChoice
        Task { await CBManager.closeAdapter(opening.value.adapter, choice: choice) }
    }

    /// The object the events go to (held weakly).
    public var delegate: (any CBCentralManagerDelegate)? {
        get { protected.withLock { $0.delegate } }
        set { protected.withLock { $0.delegate = newValue } }
    }

    /// The adapter's state, as last reported to the delegate (`unknown` until the controller is up).
    public override var state: CBManagerState { protected.withLock { $0.state } }

    /// Whether a scan is running: `true` from ``scanForPeripherals(withServices:options:)`` until ``stopScan()``.
    public var isScanning: Bool { protected.withLock { $0.isScanning } }

    /// The features of the controller of the central manager that last powered on (none before any did).
    static let supportedFeatures = Locked<Feature>([])

    /// Whether the controller supports `features`: CoreBluetooth's class method asks the device's one controller;
    /// on Linux it answers for the controller of the central manager of this process that last reached
    /// `poweredOn` (`false` before any did). ``Feature/extendedScanAndConnect`` is supported when the controller lists
    /// every command of LE extended advertising, scanning and connecting (the host then uses them).
    public class func supports(_ features: Feature) -> Bool {
        supportedFeatures.withLock { $0.isSuperset(of: features) }
    }

    /// Asks for ``CBCentralManagerDelegate/centralManager(_:connectionEventDidOccur:for:)`` when a link matching
    /// `options` comes up or goes down: ``CBConnectionEventMatchingOption/peripheralUUIDs`` (`[UUID]`) matches
    /// peripherals by identifier, ``CBConnectionEventMatchingOption/serviceUUIDs`` (`[CBUUID]`) peripherals having
    /// one of these services among those discovered (at the event); a peripheral matching either is reported.
    /// `nil` or empty options match every link. A new call replaces the options.
    ///
    /// iOS reports the links of the whole system (other apps' too); on Linux, the links of this manager's
    /// controller in the central role (those of this manager, and any other host program's on a shared controller).
    public func registerForConnectionEvents(options: [CBConnectionEventMatchingOption: Any]? = nil) {
        let previous = protected.withLock { state -> Task<Void, Never>? in
            state.connectionEventOptions = options ?? [:]
            let previous = state.connectionEventTask
            state.connectionEventTask = nil
            return previous
        }
        previous?.cancel()
        // Subscribed in the queue of the connection attempts, so that an attempt asked for after this call is seen.
        let opening = central
        connections.submit { [weak self] in
            guard let self, self.protected.withLock({ $0.connectionEventTask == nil }) else { return }
            let events = await opening.value.connectionEvents()
            let task = Task { [weak self] in
                for await event in events {
                    guard let self else { return }
                    switch event {
                    case .connected(let link) where link.role == .central:
                        self.connectionEvent(.peerConnected, peer: link.peer)
                    case .disconnected(let link, _) where link.role == .central:
                        self.connectionEvent(.peerDisconnected, peer: link.peer)
                    default:
                        continue
                    }
                }
            }
            self.protected.withLock { $0.connectionEventTask = task }
        }
    }

    private func connectionEvent(_ event: CBConnectionEvent, peer: LEAddress) {
        deliver { manager in
            guard let options = manager.protected.withLock({ $0.connectionEventOptions }) else { return }
            let peripheral = manager.peripheral(for: peer, name: nil)
            let identifiers = options[.peripheralUUIDs] as? [UUID]
            let services = options[.serviceUUIDs] as? [CBUUID]
            if identifiers != nil || services != nil {
                let byIdentifier = identifiers?.contains(peripheral.identifier) ?? false
                let discovered = (peripheral.services ?? []).map(\.uuid)
                let byService = services?.contains(where: discovered.contains) ?? false
                guard byIdentifier || byService else { return }
            }
            manager.delegate?.centralManager(manager, connectionEventDidOccur: event, for: peripheral)
        }
    }

    /// Runs `body` on the delegate queue, after the callbacks already queued.
    func deliver(_ body: @escaping @Sendable (CBCentralManager) -> Void) {
        deliveries.add(1, ordering: .sequentiallyConsistent)
        delegateQueue.async {
            body(self)
            self.deliveries.subtract(1, ordering: .sequentiallyConsistent)
        }
    }

    /// Callbacks queued or running (a simulated world waits for none between its steps).
    private let deliveries = Atomic<Int>(0)

    /// Whether a delegate callback is queued or running.
    var isDelivering: Bool { deliveries.load(ordering: .sequentiallyConsistent) > 0 }

    private func adapterStateChanged(_ new: CBManagerState) {
        deliver { manager in
            let changed = manager.protected.withLock { state in
                guard state.state != new else { return false }
                state.state = new
                if new != .poweredOn { state.isScanning = false }
                return true
            }
            guard changed, new != .unknown else { return }
            manager.delegate?.centralManagerDidUpdateState(manager)
        }
    }

    /// The one peripheral object of a device for this manager.
    /// The peripheral object of the device `identity` names (its identity address when a bond resolves the private
    /// address it was `heard` at, or that address), made on first sight: one object, and one identifier, per device.
    func peripheral(for identity: LEAddress, heardAt heard: LEAddress? = nil, name: String?) -> CBPeripheral {
        protected.withLock { state in
            if let known = state.peripherals[identity] {
                if let name { known.advertisedName(name) }
                if let heard { known.heard(at: heard) }
                return known
            }
            // An address heard from a bonded private device (a connection event's peer) is that device.
            if heard == nil, let known = state.peripherals.values.first(where: { $0.address == identity }) { return known }
            let peripheral = CBPeripheral(manager: self, identity: identity, heardAt: heard, name: name)
            state.peripherals[identity] = peripheral
            return peripheral
        }
    }

    /// The peripherals with these identifiers, without scanning: those this manager has seen, and any identifier of
    /// the form ``CBPeripheral/identifier`` documents (the address is in it), which gives a peripheral that can be
    /// connected to directly. Other identifiers are left out. (iOS returns only devices the system knows.)
    public func retrievePeripherals(withIdentifiers identifiers: [UUID]) -> [CBPeripheral] {
        identifiers.compactMap { identifier in
            if let known = protected.withLock({ $0.peripherals.values.first { $0.identifier == identifier } }) { return known }
            return CBPeripheral.address(from: identifier).map { peripheral(for: $0, name: nil) }
        }
    }

    /// The peripherals connected through this manager that have one of these services among those discovered
    /// (iOS also returns those other apps connected; on Linux each program has its own controller).
    public func retrieveConnectedPeripherals(withServices serviceUUIDs: [CBUUID]) -> [CBPeripheral] {
        // (A paired private device is in the table twice: under the address it paired through and its identity.)
        let known: [CBPeripheral] = protected.withLock { state in
            var seen = Set<ObjectIdentifier>()
            return state.peripherals.values.filter { seen.insert(ObjectIdentifier($0)).inserted }
        }
        let connected = known.filter { peripheral in
            peripheral.state == .connected && (peripheral.services ?? []).contains { service in serviceUUIDs.contains(service.uuid) }
        }
        return connected.sorted { $0.identifier.uuidString < $1.identifier.uuidString }
    }

    // MARK: Scanning

    /// Scans for advertising peripherals; each one found is reported to
    /// ``CBCentralManagerDelegate/centralManager(_:didDiscover:advertisementData:rssi:)``. A new call replaces the
    /// running scan.
    ///
    /// - Parameters:
    ///   - serviceUUIDs: only peripherals advertising one of these services (in their advertising data or scan
    ///     response); `nil` or empty: all.
    ///   - options: ``CBCentralManagerScanOptionAllowDuplicatesKey`` (report every advertisement, not only the first
    ///     and those whose data changed) and ``CBCentralManagerScanOptionSolicitedServiceUUIDsKey`` (also report
    ///     peripherals soliciting one of these services).
    public func scanForPeripherals(withServices serviceUUIDs: [CBUUID]?, options: [String: Any]? = nil) {
        guard !isSwitchedOff else { return }
        let services = (serviceUUIDs ?? []).map(\.bluetoothUUID)
        let solicited = (options?[CBCentralManagerScanOptionSolicitedServiceUUIDsKey] as? [CBUUID] ?? []).map(\.bluetoothUUID)
        let allowDuplicates = Self.bool(options?[CBCentralManagerScanOptionAllowDuplicatesKey])
        let (generation, previous) = protected.withLock { state in
            state.scanGeneration += 1
            state.isScanning = true
            let previous = state.scanTask
            state.scanTask = nil
            return (state.scanGeneration, previous)
        }
        previous?.cancel()
        let opening = central
        operations.submit { [weak self] in
            guard let self, self.protected.withLock({ $0.scanGeneration == generation }) else { return }
            let central = await opening.value
            let reports: AsyncThrowingStream<DiscoveredPeripheral, any Error>
            do {
                reports = try await central.scan(allowDuplicates: allowDuplicates)
            } catch {
                self.protected.withLock { state in
                    if state.scanGeneration == generation { state.isScanning = false }
                }
                return
            }
            let task = Task { [weak self] in
                do {
                    for try await discovered in reports {
                        guard let self else { return }
                        let advertised = discovered.serviceUUIDs
                        let soliciting = (try? discovered.advertisementData.solicitedServiceUUIDs()) ?? []
                        guard services.isEmpty || services.contains(where: advertised.contains)
                            || solicited.contains(where: soliciting.contains) else { continue }
                        if let identity = discovered.identity { await self.recognise(identity, through: central) }
                        self.discovered(discovered, generation: generation)
                    }
                } catch {
                    // The scan ended (the controller went away): the state update says so.
                }
            }
            let current = self.protected.withLock { state in
                guard state.scanGeneration == generation else { return false }
                state.scanTask = task
                return true
            }
            if !current { task.cancel() }
        }
    }

    /// Stops scanning: no discovery is reported after this call.
    public func stopScan() {
        let task = protected.withLock { state in
            state.scanGeneration += 1
            state.isScanning = false
            let task = state.scanTask
            state.scanTask = nil
            return task
        }
        // Ending the scan's stream stops the controller's scan (unless a newer scan has replaced it).
        task?.cancel()
    }

    /// Keeps one peripheral per device across its pairing, as iOS does: a private device first met (and paired) at
    /// a resolvable private address, now heard at another that its bond resolves to `identity`, is the peripheral
    /// made for the address it paired through (same object, same ``CBPeer/identifier``).
    private func recognise(_ identity: LEAddress, through central: Central) async {
        guard protected.withLock({ $0.peripherals[identity] == nil }),
              let bond = (try? await central.bonds())?.first(where: { $0.peer == identity }),
              let pairedThrough = bond.pairedThrough else { return }
        protected.withLock { state in
            guard state.peripherals[identity] == nil, let known = state.peripherals[pairedThrough] else { return }
            state.peripherals[identity] = known
        }
    }

    private func discovered(_ discovered: DiscoveredPeripheral, generation: Int) {
        deliver { manager in
            guard manager.protected.withLock({ $0.scanGeneration == generation }) else { return }
            // A bonded device advertising from resolvable private addresses is the same peripheral behind each one,
            // as on iOS (its identifier comes from the identity address the bond gave).
            let peripheral = manager.peripheral(for: discovered.identity ?? discovered.address, heardAt: discovered.address,
                                                name: discovered.name)
            manager.delegate?.centralManager(manager, didDiscover: peripheral,
                                             advertisementData: Self.advertisementDictionary(discovered.advertisementData,
                                                                                               isConnectable: discovered.isConnectable),
                                             rssi: NSNumber(value: discovered.rssi))
        }
    }

    /// The advertisement-data dictionary CoreBluetooth gives for a discovered peripheral's advertising data (merged
    /// with its scan response).
    static func advertisementDictionary(_ data: AdvertisingData, isConnectable: Bool) -> [String: Any] {
        var dictionary: [String: Any] = [CBAdvertisementDataIsConnectable: NSNumber(value: isConnectable)]
        if let name = data.localName { dictionary[CBAdvertisementDataLocalNameKey] = name }
        let services = (try? data.serviceUUIDs()) ?? []
        if !services.isEmpty { dictionary[CBAdvertisementDataServiceUUIDsKey] = services.map { CBUUID($0) } }
        if let solicited = try? data.solicitedServiceUUIDs(), !solicited.isEmpty {
            dictionary[CBAdvertisementDataSolicitedServiceUUIDsKey] = solicited.map { CBUUID($0) }
        }
        // iOS reports one manufacturer data structure: the first (the advertising data's when both carry one).
        if let manufacturer = (try? data.manufacturerData())?.first {
            let id = manufacturer.companyID.rawValue
            dictionary[CBAdvertisementDataManufacturerDataKey] =
                Data([UInt8(truncatingIfNeeded: id), UInt8(id >> 8)] + manufacturer.data)
        }
        if let serviceData = try? data.serviceData(), !serviceData.isEmpty {
            var entries: [CBUUID: Data] = [:]
            for (uuid, value) in serviceData { entries[CBUUID(uuid)] = Data(value) }
            dictionary[CBAdvertisementDataServiceDataKey] = entries
        }
        if let txPower = try? data.txPowerLevel() { dictionary[CBAdvertisementDataTxPowerLevelKey] = NSNumber(value: txPower) }
        return dictionary
    }

    /// A Boolean option given as `Bool` or `NSNumber`.
    static func bool(_ value: Any?) -> Bool {
        if let value = value as? Bool { return value }
        if let value = value as? NSNumber { return value.boolValue }
        return false
    }

    // MARK: Connecting

    /// Connects to a peripheral found by a scan; ``CBCentralManagerDelegate/centralManager(_:didConnect:)`` or
    /// ``CBCentralManagerDelegate/centralManager(_:didFailToConnect:error:)`` follows. Right after connecting, the
    /// central exchanges MTUs, as iOS does.
    ///
    /// Unlike CoreBluetooth, an attempt does not wait forever: after ``connectionAttemptTimeout`` it fails with
    /// ``CBError/Code/connectionTimeout``.
    ///
    /// - Parameters:
    ///   - peripheral: a peripheral of this manager.
    ///   - options: CoreBluetooth's connection options. ``CBConnectPeripheralOptionEnableAutoReconnect`` makes the
    ///     manager reconnect by itself when the link is lost (see there); the others have no effect on Linux (the
    ///     `NotifyOn…` keys ask iOS for alerts, ``CBConnectPeripheralOptionStartDelayKey`` for a delay,
    ///     ``CBConnectPeripheralOptionEnableTransportBridgingKey`` for BR/EDR, ``CBConnectPeripheralOptionRequiresANCS``
    ///     for Apple's notification service).
    public func connect(_ peripheral: CBPeripheral, options: [String: Any]? = nil) {
        guard !isSwitchedOff else { return }
        guard let attempt = peripheral.beginConnecting(autoReconnect: Self.bool(options?[CBConnectPeripheralOptionEnableAutoReconnect]))
        else { return }
        makeAttempt(attempt, to: peripheral)
    }

    /// Queues connection attempt `attempt` to `peripheral` (one of ``connect(_:options:)``, or of a reconnection).
    func makeAttempt(_ attempt: Int, to peripheral: CBPeripheral) {
        let opening = central
        connections.submit { [weak self] in
            guard let self else { return }
            await peripheral.connect(attempt: attempt, using: await opening.value, manager: self)
        }
    }

    /// How long a connection attempt lasts before ``CBCentralManagerDelegate/centralManager(_:didFailToConnect:error:)``
    /// reports ``CBError/Code/connectionTimeout``.
    public static let connectionAttemptTimeout: Duration = .seconds(30)

    /// Disconnects a peripheral, or abandons a connection attempt still pending.
    /// ``CBCentralManagerDelegate/centralManager(_:didDisconnectPeripheral:error:)`` follows with a `nil` error for a
    /// connected peripheral. An abandoned attempt is reported by no callback: the controller's attempt is cancelled
    /// (LE Create Connection Cancel), or, if it has not started, never made; a link that comes up anyway is dropped.
    public func cancelPeripheralConnection(_ peripheral: CBPeripheral) {
        let wasConnecting = peripheral.state == .connecting
        guard let remote = peripheral.beginDisconnecting() else {
            guard wasConnecting else { return }
            let opening = central
            let address = peripheral.address
            operations.submit { await opening.value.cancelConnectionAttempt(to: address) }
            return
        }
        let opening = central
        operations.submit {
            let central = await opening.value
            // The bytes written on the device's channels go first (the link's disconnection then waits for the
            // controller to complete them).
            await peripheral.channelsSettled()
            // A failure means the link is already gone: its disconnection event reports it.
            _ = try? await central.disconnect(remote)
        }
    }
}
