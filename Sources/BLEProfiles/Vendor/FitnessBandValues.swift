import BLEWire

/// The fitness band's UUIDs: the Mi Band 1 layout (a vendor service 0xFEE0) and the Immediate Alert service the
/// band vibrates through.
public enum FitnessBand {
    /// The band's vendor service (Mi Band 1).
    public static let service: BluetoothUUID = 0xFEE0
    /// Device information bytes (read), see ``FitnessBandDeviceInfo``.
    public static let deviceInfo: BluetoothUUID = 0xFF01
    /// The step count (read, notify), a 4-byte little-endian unsigned integer.
    public static let steps: BluetoothUUID = 0xFF06
    /// The battery (read, notify), see ``FitnessBandBattery``.
    public static let battery: BluetoothUUID = 0xFF0C
    /// Immediate Alert service (Immediate Alert Service 1.0).
    public static let immediateAlertService: BluetoothUUID = 0x1802
    /// Alert Level (write without response): 0x00 stops, 0x01 and 0x02 vibrate; the band also takes ASCII `SHAKE`.
    public static let alertLevel: BluetoothUUID = 0x2A06
    /// The ASCII command the band also accepts on Alert Level to vibrate.
    public static let shakeCommand: [UInt8] = Array("SHAKE".utf8)
}

/// Mi Band 1 step count (characteristic 0xFF06): the steps since the band's counter was reset, a 4-byte
/// little-endian unsigned integer.
public struct FitnessBandSteps: WireCodable, Hashable {
    /// The step count.
    public var count: UInt32
    /// A step count.
    public init(_ count: UInt32) { self.count = count }
    /// Decodes the 4 bytes.
    public init(from reader: inout ByteReader) throws(WireError) { count = try reader.readUInt32("steps") }
    /// Encodes the 4 bytes.
    public func encode(into writer: inout ByteWriter) { writer.write(count) }
}

/// Mi Band 1 device information (characteristic 0xFF01), in the layout this module serves and reads, 16 bytes:
///
/// | Bytes  | Field                                            |
/// |--------|--------------------------------------------------|
/// | 0–7    | ``deviceID``: the band's 8-byte identifier       |
/// | 8–11   | ``profileVersion``, little-endian                |
/// | 12–15  | ``firmwareVersion``, little-endian               |
///
/// The versions read as four bytes, most significant first, for display: 0x01020304 is "1.2.3.4".
public struct FitnessBandDeviceInfo: WireCodable, Hashable {
    /// The band's identifier.
    public var deviceID: [UInt8]
    /// The profile version.
    public var profileVersion: UInt32
    /// The firmware version.
    public var firmwareVersion: UInt32

    /// Device information; `deviceID` is cut or zero-padded to 8 bytes.
    public init(deviceID: [UInt8], profileVersion: UInt32, firmwareVersion: UInt32) {
        self.deviceID = Array((deviceID + Array(repeating: 0, count: 8)).prefix(8))
        self.profileVersion = profileVersion
        self.firmwareVersion = firmwareVersion
    }

    /// Decodes the 16 bytes.
    public init(from reader: inout ByteReader) throws(WireError) {
        deviceID = try reader.readBytes(8, "device ID")
        profileVersion = try reader.readUInt32("profile version")
        firmwareVersion = try reader.readUInt32("firmware version")
    }

    /// Encodes the 16 bytes.
    public func encode(into writer: inout ByteWriter) {
        writer.write(deviceID)
        writer.write(profileVersion)
        writer.write(firmwareVersion)
    }

    /// A version as dotted text, most significant byte first ("1.2.3.4").
    public static func versionText(_ version: UInt32) -> String {
        [24, 16, 8, 0].map { String(UInt8(truncatingIfNeeded: version >> $0)) }.joined(separator: ".")
    }
}

/// Mi Band 1 battery (characteristic 0xFF0C), in the layout this module serves and reads, 10 bytes:
///
/// | Bytes | Field                                                                     |
/// |-------|---------------------------------------------------------------------------|
/// | 0     | ``percent`` (0–100; more is an error)                                     |
/// | 1–6   | ``lastCharged``: year − 2000, month (1–12), day, hour, minute, second     |
/// | 7–8   | ``chargeCycles``, little-endian                                           |
/// | 9     | ``state``: 1 low, 2 charging, 3 full, 4 not charging (others kept as is)  |
public struct FitnessBandBattery: WireCodable, Hashable {
    /// The charge state.
    public enum State: Sendable, Hashable {
        /// Low battery (1).
        case low
        /// Charging (2).
        case charging
        /// Charged full (3).
        case full
        /// Not charging (4).
        case notCharging
        /// Another value.
        case other(UInt8)

        /// The state of a byte.
        public init(rawValue: UInt8) {
            switch rawValue {
            case 1: self = .low
            case 2: self = .charging
            case 3: self = .full
            case 4: self = .notCharging
            default: self = .other(rawValue)
            }
        }

        /// The state's byte.
        public var rawValue: UInt8 {
            switch self {
            case .low: 1
            case .charging: 2
            case .full: 3
            case .notCharging: 4
            case .other(let value): value
            }
        }
    }

    /// A date and time to the second, as the band stores it (years from 2000).
    public struct Timestamp: Sendable, Hashable {
        /// The year (2000...2255).
        public var year: Int
        /// The month, 1–12.
        public var month: UInt8
        /// The day, 1–31.
        public var day: UInt8
        /// The hour, 0–23.
        public var hour: UInt8
        /// The minute, 0–59.
        public var minute: UInt8
        /// The second, 0–59.
        public var second: UInt8
        /// A timestamp.
        public init(year: Int, month: UInt8, day: UInt8, hour: UInt8, minute: UInt8, second: UInt8) {
            self.year = year
            self.month = month
            self.day = day
            self.hour = hour
            self.minute = minute
            self.second = second
        }
    }

    /// The charge level in percent.
    public var percent: UInt8
    /// When the band was last charged.
    public var lastCharged: Timestamp
    /// How many times it was charged.
    public var chargeCycles: UInt16
    /// Whether it is charging.
    public var state: State

    /// A battery value.
    public init(percent: UInt8, lastCharged: Timestamp, chargeCycles: UInt16, state: State) {
        self.percent = percent
        self.lastCharged = lastCharged
        self.chargeCycles = chargeCycles
        self.state = state
    }

    /// Decodes the 10 bytes; a percentage over 100 or a month, day or time out of range is ``WireErrorCode/invalidValue``.
    public init(from reader: inout ByteReader) throws(WireError) {
        percent = try reader.readUInt8("battery percent")
        guard percent <= 100 else { throw WireError(.invalidValue, "battery: \(percent) % is over 100") }
        let year = Int(try reader.readUInt8("last charge year")) + 2000
        let month = try reader.readUInt8("last charge month")
        let day = try reader.readUInt8("last charge day")
        let hour = try reader.readUInt8("last charge hour")
        let minute = try reader.readUInt8("last charge minute")
        let second = try reader.readUInt8("last charge second")
        guard (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 60 else {
            throw WireError(.invalidValue, "battery: last charge \(year)-\(month)-\(day) \(hour):\(minute):\(second) is not a date")
        }
        lastCharged = Timestamp(year: year, month: month, day: day, hour: hour, minute: minute, second: second)
        chargeCycles = try reader.readUInt16("charge cycles")
        state = State(rawValue: try reader.readUInt8("battery state"))
    }

    /// Encodes the 10 bytes (a year outside 2000...2255 is clamped into it).
    public func encode(into writer: inout ByteWriter) {
        writer.write(percent)
        writer.write(UInt8(clamping: lastCharged.year - 2000))
        for byte in [lastCharged.month, lastCharged.day, lastCharged.hour, lastCharged.minute, lastCharged.second] { writer.write(byte) }
        writer.write(chargeCycles)
        writer.write(state.rawValue)
    }
}

/// Immediate Alert Service 1.0, 3.1 (the Alert Level characteristic): what the band is asked to do, including the
/// ASCII `SHAKE` command the tutorials' band also accepts.
public enum FitnessBandAlert: Sendable, Hashable {
    /// Alert Level 0x00, No Alert: stop vibrating.
    case stop
    /// Alert Level 0x01, Mild Alert: vibrate.
    case mild
    /// Alert Level 0x02, High Alert: vibrate.
    case high
    /// The ASCII command `SHAKE`: vibrate.
    case shake

    /// Decodes a written value; any other value is a typed ``WireError``.
    public init(bytes: [UInt8]) throws(WireError) {
        switch bytes {
        case [0x00]: self = .stop
        case [0x01]: self = .mild
        case [0x02]: self = .high
        case FitnessBand.shakeCommand: self = .shake
        case []: throw WireError(.truncated, "alert level: empty")
        default: throw WireError(.invalidValue, "alert level: \(bytes.hexString()) is neither 0–2 nor SHAKE")
        }
    }

    /// The bytes written.
    public var bytes: [UInt8] {
        switch self {
        case .stop: [0x00]
        case .mild: [0x01]
        case .high: [0x02]
        case .shake: FitnessBand.shakeCommand
        }
    }

    /// Whether the band vibrates.
    public var vibrates: Bool { self != .stop }
}
