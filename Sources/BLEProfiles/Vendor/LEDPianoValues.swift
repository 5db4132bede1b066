import BLEWire

/// The LED piano's UUIDs: a keyboard service whose characteristic notifies MIDI messages, and an LED service whose
/// characteristic takes LED frames (``PianoLEDFrame``).
public enum LEDPiano {
    /// The keyboard service.
    public static let keyService: BluetoothUUID = 0xFFE0
    /// Key events (notify): 3-byte MIDI messages (``MIDIMessage``), one or more per notification.
    public static let keyEvents: BluetoothUUID = 0xFFE2
    /// The LED service.
    public static let ledService: BluetoothUUID = 0xFFE1
    /// LED frames (write with response), see ``PianoLEDFrame``.
    public static let ledControl: BluetoothUUID = 0xFFE3
    /// The number of keys (and LEDs): 115, numbered 0x00...0x72.
    public static let keyCount = 115
    /// The ATT error the piano refuses a malformed LED frame with: 0x13 Value Not Allowed (Core 5.4, Vol 3, Part F,
    /// 3.4.1.1).
    public static let malformedFrameError = ATTErrorCode.valueNotAllowed
}

/// MIDI 1.0 Detailed Specification, Channel Voice Messages (Note On, Note Off): the note messages the piano notifies, 3 bytes
/// each: `9n kk vv` note-on, `8n kk vv` note-off (n the channel 0–15, kk the note 0–127, vv the velocity 0–127). A
/// note-on with velocity 0 means note-off and decodes as ``noteOff(channel:note:velocity:)`` with velocity 0.
public enum MIDIMessage: Sendable, Hashable {
    /// A key pressed.
    case noteOn(channel: UInt8, note: UInt8, velocity: UInt8)
    /// A key released.
    case noteOff(channel: UInt8, note: UInt8, velocity: UInt8)

    /// Decodes one 3-byte message. A status other than note-on or note-off is ``WireErrorCode/unknownType``, a
    /// data byte with its top bit set ``WireErrorCode/invalidValue``, a short or long value truncated or trailing.
    public init(bytes: [UInt8]) throws(WireError) {
        var reader = ByteReader(bytes)
        self = try Self.decode(&reader)
        try reader.expectEnd("MIDI message")
    }

    /// Decodes the messages of a notification (one or more, 3 bytes each).
    public static func messages(in bytes: [UInt8]) throws(WireError) -> [MIDIMessage] {
        guard !bytes.isEmpty else { throw WireError(.truncated, "MIDI: an empty notification") }
        var reader = ByteReader(bytes)
        var messages: [MIDIMessage] = []
        while !reader.isAtEnd { messages.append(try decode(&reader)) }
        return messages
    }

    private static func decode(_ reader: inout ByteReader) throws(WireError) -> MIDIMessage {
        let status = try reader.readUInt8("MIDI status")
        let note = try reader.readUInt8("MIDI note")
        let velocity = try reader.readUInt8("MIDI velocity")
        guard status & 0xF0 == 0x80 || status & 0xF0 == 0x90 else {
            throw WireError(.unknownType, "MIDI: status 0x\([status].hexString()) is not a note-on or note-off")
        }
        guard note < 0x80, velocity < 0x80 else {
            throw WireError(.invalidValue, "MIDI: data bytes \([note, velocity].hexString(separator: " ")) over 0x7F")
        }
        let channel = status & 0x0F
        return status & 0xF0 == 0x90 && velocity > 0
            ? .noteOn(channel: channel, note: note, velocity: velocity)
            : .noteOff(channel: channel, note: note, velocity: velocity)
    }

    /// The 3 bytes (channel, note and velocity keep their low 4, 7 and 7 bits).
    public var bytes: [UInt8] {
        switch self {
        case .noteOn(let channel, let note, let velocity): [0x90 | channel & 0x0F, note & 0x7F, velocity & 0x7F]
        case .noteOff(let channel, let note, let velocity): [0x80 | channel & 0x0F, note & 0x7F, velocity & 0x7F]
        }
    }

    /// The note.
    public var note: UInt8 {
        switch self {
        case .noteOn(_, let note, _), .noteOff(_, let note, _): note
        }
    }
}

/// The tutorials' LED piano: the LED frame (characteristic 0xFFE3), given by the device: `F0 3D 3D <key> <mode> F7`, a
/// vendor System Exclusive message (MIDI 1.0 Detailed Specification, System Exclusive), key 0x00...0x72. The mode values are this module's choice:
/// see ``Mode``.
public struct PianoLEDFrame: WireCodable, Hashable {
    /// What the key's LED does (this module's choice of values).
    public enum Mode: UInt8, Sendable, Hashable, CaseIterable {
        /// 0x00: off.
        case off = 0x00
        /// 0x01: on.
        case on = 0x01
        /// 0x02: blinking.
        case blink = 0x02
    }

    /// The bytes before the key: System Exclusive start and the two vendor bytes.
    public static let prefix: [UInt8] = [0xF0, 0x3D, 0x3D]
    /// The last byte: End of Exclusive.
    public static let suffix: UInt8 = 0xF7
    /// The highest key.
    public static let maximumKey: UInt8 = 0x72

    /// The key, 0x00...0x72.
    public let key: UInt8
    /// The LED's mode.
    public var mode: Mode

    /// A frame; throws ``WireErrorCode/invalidValue`` for a key over 0x72.
    public init(key: UInt8, mode: Mode) throws(WireError) {
        guard key <= Self.maximumKey else { throw WireError(.invalidValue, "LED frame: key 0x\([key].hexString()) is over 0x72") }
        self.key = key
        self.mode = mode
    }

    /// Decodes the 6 bytes: a wrong marker, a key over 0x72 or an unknown mode is ``WireErrorCode/invalidValue``.
    public init(from reader: inout ByteReader) throws(WireError) {
        guard try reader.readBytes(3, "LED frame start") == Self.prefix else {
            throw WireError(.invalidValue, "LED frame: does not start with F0 3D 3D")
        }
        let key = try reader.readUInt8("LED key")
        let rawMode = try reader.readUInt8("LED mode")
        guard try reader.readUInt8("LED frame end") == Self.suffix else { throw WireError(.invalidValue, "LED frame: does not end with F7") }
        guard let mode = Mode(rawValue: rawMode) else { throw WireError(.invalidValue, "LED frame: mode 0x\([rawMode].hexString()) is unknown") }
        try self.init(key: key, mode: mode)
    }

    /// Encodes the 6 bytes.
    public func encode(into writer: inout ByteWriter) {
        writer.write(Self.prefix)
        writer.write(key)
        writer.write(mode.rawValue)
        writer.write(Self.suffix)
    }
}
