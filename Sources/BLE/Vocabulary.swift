import BLEErrors
import BLEHost
import BLEProtocols
import BLETransport
import BLEVirtualController
import BLEWire

// The vocabulary of the BLE module: the value types an application names, defined in the lower modules and given
// here under the same names so that `import BLE` is enough to write a central, a peripheral, a pairing or an L2CAP
// channel. Each name is the lower module's type itself (a typealias, not a copy): a program that also imports the
// lower module by name sees one type under one name.
//
// The lower modules (BLEWire, BLEProtocols, BLETransport, BLEHost, BLEVirtualController) stay public for programs
// that build on them (codecs, HCI commands, the host stack, state machines); those import them by name. The host
// stack itself, `HCIHost`, is deliberately not named here: ``Adapter`` stands for it.

// MARK: Identifiers and addresses

/// A Bluetooth UUID: a 16- or 32-bit SIG-assigned number, or a full 128-bit UUID. Written as an integer literal
/// (`0x180D`) or with its static names (`.heartRate`). Core 5.4, Vol 3, Part B, 2.5.1.
public typealias BluetoothUUID = BLEWire.BluetoothUUID
/// A 48-bit Bluetooth device address, without its type.
public typealias BluetoothAddress = BLEWire.BluetoothAddress
/// An LE device address with its type (public or random), as devices advertise and connect with it.
public typealias LEAddress = BLEWire.LEAddress
/// The type of an LE address: public, random, or the identity forms the controller resolves.
public typealias LEAddressType = BLEWire.LEAddressType
/// A company identifier assigned by the Bluetooth SIG, as manufacturer specific data starts with it.
public typealias CompanyIdentifier = BLEWire.CompanyIdentifier

// MARK: Advertising

/// Advertising data or a scan response: a sequence of AD structures, with typed accessors (local name, service
/// UUIDs, manufacturer data, TX power). Core 5.4, Vol 3, Part C, 11.
public typealias AdvertisingData = BLEWire.AdvertisingData
/// One AD structure of advertising data: its type and its bytes.
public typealias ADStructure = BLEWire.ADStructure
/// The type of an AD structure (Flags, Complete Local Name, Service Data, …), from the Assigned Numbers.
public typealias ADType = BLEWire.ADType
/// The Flags AD structure's bits (LE General Discoverable Mode, BR/EDR Not Supported, …).
public typealias ADFlags = BLEWire.ADFlags
/// Manufacturer specific data: a company identifier and that company's bytes.
public typealias ManufacturerData = BLEWire.ManufacturerData
/// One advertising report as a scan receives it: the advertiser's address, the event type, the RSSI and the data.
/// ``ScanTracker`` merges reports into ``DiscoveredPeripheral`` values.
public typealias AdvertisementReport = BLEHost.AdvertisementReport

// MARK: The adapter and its links

/// The state of an ``Adapter`` (and of the centrals and peripheral managers on it), named as CoreBluetooth's
/// `CBManagerState` names it.
public typealias AdapterState = BLEHost.AdapterState
/// An LE link as the adapter knows it: its identity, handle, role, peer and parameters. Peripheral managers name
/// centrals by it.
public typealias HostConnection = BLEHost.HostConnection
/// Something that happened on an adapter: state changes, links made and lost, parameter updates, encryption and
/// pairing outcomes (``Adapter/events()``, ``Central/connectionEvents()``).
public typealias HostEvent = BLEHost.HostEvent
/// A link's identity, never reused by an adapter (unlike connection handles).
public typealias LinkID = BLEHost.LinkID
/// The values of a characteristic's notifications or indications (``RemotePeripheral/notifications(for:bufferingLimit:)``).
public typealias NotificationStream = BLEHost.NotificationStream
/// A connection handle, as the controller numbers a link (a controller may reuse it for the next link).
public typealias ConnectionHandle = BLEWire.ConnectionHandle
/// This side's role on a link: central or peripheral.
public typealias HCIRole = BLEWire.HCIRole
/// An HCI status code: the reason a link went down, or why a controller refused a command. Core 5.4, Vol 1, Part F.
public typealias HCIStatus = BLEWire.HCIStatus
/// A PHY a link uses: LE 1M, LE 2M or LE Coded.
public typealias LEPHY = BLEWire.LEPHY
/// A set of PHYs, as a PHY preference names them.
public typealias LEPHYs = BLEWire.LEPHYs
/// Which of this side's addresses advertising, a scan or a connection attempt uses: the default (the resolvable
/// private address with privacy on, the identity address otherwise), the identity address, or a random one.
public typealias OwnAddress = BLEProtocols.OwnAddress

// MARK: The controller

/// What the adapter's controller can do, as read when it powered on: version, supported commands, features,
/// buffers, limits (``Adapter/capabilities``).
public typealias ControllerCapabilities = BLEHost.ControllerCapabilities
/// Something a call may need of the controller; a call that needs what the controller lacks throws
/// ``HostError`` with code `.unsupportedByController(capability)`.
public typealias ControllerCapability = BLEHost.ControllerCapability
/// A Core Specification version as the HCI and the link layer report it ("5.3").
public typealias HCIVersion = BLEWire.HCIVersion
/// The LE features of a link layer (LE 2M PHY, Data Packet Length Extension, …), with their names.
public typealias LEFeatures = BLEWire.LEFeatures
/// The HCI commands a controller lists as supported (64 octets of bits), with their names.
public typealias HCISupportedCommands = BLEWire.HCISupportedCommands
/// An HCI command opcode.
public typealias HCIOpcode = BLEWire.HCIOpcode

// MARK: GATT, client side

/// A service a central discovered on a peripheral, with its handle range.
public typealias GATTService = BLEProtocols.GATTService
/// A characteristic a central discovered, with its properties and value handle.
public typealias GATTCharacteristic = BLEProtocols.GATTCharacteristic
/// A descriptor a central discovered.
public typealias GATTDescriptor = BLEProtocols.GATTDescriptor
/// A characteristic's properties (read, write, notify, indicate, …). Core 5.4, Vol 3, Part G, 3.3.1.1.
public typealias GATTCharacteristicProperties = BLEProtocols.GATTCharacteristicProperties
/// A service with everything in it, as ``RemotePeripheral/discoverAll(descriptors:)`` finds it.
public typealias GATTDiscoveredService = BLEProtocols.GATTDiscoveredService
/// A characteristic with its descriptors, as a whole-database discovery finds it.
public typealias GATTDiscoveredCharacteristic = BLEProtocols.GATTDiscoveredCharacteristic
/// What a whole-database discovery cost and whether the ``GATTCache`` answered it.
public typealias GATTDiscoveryReport = BLEHost.GATTDiscoveryReport
/// A cache of discovered databases, in memory or in a file, checked against each device's Database Hash.
public typealias GATTCache = BLEHost.GATTCache

// MARK: GATT, server side

/// A service to publish with ``PeripheralManager/add(_:)``: its type and characteristics.
public typealias GATTServiceDefinition = BLEProtocols.GATTServiceDefinition
/// A characteristic to publish: its type, properties, permissions, value or ``GATTValueSource``, and descriptors.
public typealias GATTCharacteristicDefinition = BLEProtocols.GATTCharacteristicDefinition
/// A descriptor to publish.
public typealias GATTDescriptorDefinition = BLEProtocols.GATTDescriptorDefinition
/// What a published attribute allows: reading and writing, and the security each needs.
public typealias GATTPermissions = BLEProtocols.GATTPermissions
/// Where a published value comes from: stored by the server, or answered by the application through
/// ``PeripheralManager/requests()``.
public typealias GATTValueSource = BLEProtocols.GATTValueSource
/// A published attribute database with the handles centrals see (``PeripheralManager/database``).
public typealias GATTDatabase = BLEProtocols.GATTDatabase
/// One attribute of a ``GATTDatabase``: its handle, type, value, permissions and role.
public typealias GATTAttribute = BLEProtocols.GATTAttribute
/// An attribute handle, as the server numbers its attributes.
public typealias AttributeHandle = BLEWire.AttributeHandle

// MARK: ATT

/// An ATT error code, as a server sends it in an Error Response: the specification's codes, and the application
/// errors 0x80...0x9F. Core 5.4, Vol 3, Part F, 3.4.1.1.
public typealias ATTErrorCode = BLEWire.ATTErrorCode
/// ATT's constants and limits (default MTU, longest value of a notification or write for an MTU).
public typealias ATT = BLEWire.ATT
/// One part of a reliable (prepared) write — the attribute handle, the offset and the bytes — as
/// ``AttributeRequest/Kind/preparedWrites(_:)`` lists them. Core 5.4, Vol 3, Part F, 3.4.6.1.
public typealias ATTPrepareWriteRequest = BLEWire.ATTPrepareWriteRequest

// MARK: Security

/// How an adapter pairs and what it accepts: I/O capabilities, bonding, MITM protection, Secure Connections, key
/// size, privacy, and the bond store.
public typealias SecurityConfiguration = BLEHost.SecurityConfiguration
/// The user's part in pairing: consent, passkeys to show or type, numeric comparison (``Adapter/setPairingAgent(_:)``).
public typealias PairingAgent = BLEHost.PairingAgent
/// A pairing agent that consents to everything and enters a fixed passkey, if any.
public typealias AutomaticPairingAgent = BLEHost.AutomaticPairingAgent
/// A link's security: its encryption level, whether a bond exists, the peer's identity.
public typealias LinkSecurity = BLEHost.LinkSecurity
/// What a successful pairing gave: the method, the security level, whether it bonded, the peer's identity.
public typealias PairingOutcome = BLEHost.PairingOutcome
/// An encryption level: key size, authenticated or not, Secure Connections or legacy.
public typealias SMPSecurityLevel = BLEProtocols.SMPSecurityLevel
/// How two devices paired: Just Works, Numeric Comparison, Passkey Entry or Out of Band.
public typealias SMPPairingMethod = BLEProtocols.SMPPairingMethod
/// Why a pairing failed: a reason this side or the peer sent (Pairing Failed), a timeout, or encryption failing.
public typealias SMPPairingFailure = BLEProtocols.SMPPairingFailure
/// The reason code of a Pairing Failed PDU (Passkey Entry Failed, Confirm Value Failed, …), as an
/// ``SMPPairingFailure`` carries it. Core 5.4, Vol 3, Part H, 3.5.5.
public typealias SMPPairingFailedReason = BLEWire.SMPPairingFailedReason
/// What a device can show and input, which with the peer's chooses the pairing method.
public typealias SMPIOCapability = BLEWire.SMPIOCapability
/// The keys a pairing left for one peer, kept so that the next link encrypts without pairing.
public typealias Bond = BLEHost.Bond
/// An identity pairing distributes: an IRK and a public or static random identity address.
public typealias SMPIdentity = BLEProtocols.SMPIdentity
/// One side's long term key with its EDIV and Rand.
public typealias BondKey = BLEHost.BondKey
/// What a GATT server keeps for a bonded client between connections: its Service Changed subscription, Client
/// Supported Features and the Database Hash it last knew.
public typealias BondedGATTClient = BLEHost.BondedGATTClient
/// Where bonds and the local identity resolving key live.
public typealias BondStore = BLEHost.BondStore
/// A bond store in memory: bonds last as long as the process.
public typealias InMemoryBondStore = BLEHost.InMemoryBondStore
/// A bond store in a JSON file: bonds survive restarts.
public typealias FileBondStore = BLEHost.FileBondStore

// MARK: L2CAP channels

/// An open LE credit based channel: send SDUs, iterate the ones received, close it.
public typealias L2CAPChannel = BLEHost.L2CAPChannel
/// The SDUs an ``L2CAPChannel`` receives, as an async sequence.
public typealias L2CAPIncomingSDUs = BLEHost.L2CAPIncomingSDUs
/// A Simplified Protocol/Service Multiplexer: the number an LE credit based channel is opened on.
public typealias L2CAPSPSM = BLEWire.L2CAPSPSM
/// A channel's local MTU, MPS and initial credits.
public typealias L2CAPChannelParameters = BLEProtocols.L2CAPChannelParameters
/// The security a published channel requires of the links that open it.
public typealias L2CAPSecurityRequirement = BLEProtocols.L2CAPSecurityRequirement
/// What became of the octets sent on an ``L2CAPChannel``: sent, and confirmed by the controller before it closed.
public typealias L2CAPDelivery = BLEHost.L2CAPDelivery
/// How a disconnection's wait for the link's queued data ended: every packet completed, or how many were not.
public typealias DeliveryOutcome = BLEProtocols.DeliveryOutcome

// MARK: Transports

/// The controller a `--hci` style specification names: `.virtual`, `.tcp(host:port:)`, `.userChannel(index:)`,
/// `.serial(…)`.
public typealias HCITransportSpec = BLETransport.HCITransportSpec
/// A way to exchange HCI packets with a controller, as ``Adapter/init(transport:security:)`` takes it.
public typealias HCITransport = BLETransport.HCITransport

// MARK: Errors

/// The one shape of the stack's errors: a code, a reason and where it was raised; equal on the code. Every error type
/// below is a ``BLEFailure`` of its own code, so `(error as? any BLEError)?.reason` reads any of them and
/// `.category` says how to treat it.
public typealias BLEError = BLEErrors.BLEError

/// The one error type of the stack, generic over its code: `HostError` is `BLEFailure<HostErrorCode>`.
public typealias BLEFailure = BLEErrors.BLEFailure

/// What an error code says of how to treat the failure (not found, timed out, refused by the peer...).
public typealias BLEErrorCategory = BLEErrors.BLEErrorCategory

/// The requirement of an error code: hashable, sendable, described, and in a ``BLEErrorCategory``.
public typealias BLEErrorCode = BLEErrors.BLEErrorCode

/// Why an adapter operation failed (a command refused, a connection that failed or timed out, a closed transport).
public typealias HostError = BLEHost.HostError
/// Why a GATT operation failed: an ATT error from the server, a timeout, a malformed response, a cancellation, or
/// the link going down.
public typealias GATTError = BLEProtocols.GATTError
/// Why a transport could not be opened or stopped working.
public typealias TransportError = BLETransport.TransportError
/// Why securing a link failed.
public typealias SecurityError = BLEHost.SecurityError
/// Why a bond store could not be read or written.
public typealias BondStoreError = BLEHost.BondStoreError
/// Why bytes did not decode, or a value did not fit (advertising data over 31 bytes, for example).
public typealias WireError = BLEWire.WireError
/// Why an L2CAP channel operation was refused.
public typealias L2CAPError = BLEProtocols.L2CAPError
/// The kinds of ``HostError``.
public typealias HostErrorCode = BLEHost.HostErrorCode
/// The kinds of ``GATTError``.
public typealias GATTErrorCode = BLEProtocols.GATTErrorCode
/// The kinds of ``TransportError``.
public typealias TransportErrorCode = BLETransport.TransportErrorCode
/// The kinds of ``SecurityError``.
public typealias SecurityErrorCode = BLEHost.SecurityErrorCode
/// The kinds of ``BondStoreError``.
public typealias BondStoreErrorCode = BLEHost.BondStoreErrorCode
/// The kinds of ``WireError``.
public typealias WireErrorCode = BLEWire.WireErrorCode
/// The kinds of ``L2CAPError``.
public typealias L2CAPErrorCode = BLEProtocols.L2CAPErrorCode

// MARK: The embedded simulated world

/// The simulated air of an ``EmbeddedWorld``.
public typealias VirtualAir = BLEVirtualController.VirtualAir
/// The simulated air's model of air time (connection events, packet times on each PHY), for a ``VirtualAir`` that
/// paces links as a radio would.
public typealias AirTimeModel = BLEVirtualController.AirTimeModel
/// A place on the simulated air, in metres: distance sets the RSSI and the range.
public typealias Position = BLEVirtualController.Position
