import BLEWire

/// GATT Specification Supplement (Date Time, 0x2A08): a calendar date and wall-clock time, 7 bytes (year
/// UInt16, month, day, hours, minutes, seconds). A year, month or day of 0 means "not known". Used as the time stamp
/// of many health measurements and inside Current Time.
public struct DateTime: Sendable, Hashable, WireCodable, CustomStringConvertible {
    /// The year, 1582...9999, or 0 when not known.
    public var year: UInt16
    /// The month, 1...12, or 0 when not known.
    public var month: UInt8
    /// The day of the month, 1...31, or 0 when not known.
    public var day: UInt8
    /// Hours since midnight, 0...23.
    public var hours: UInt8
    /// Minutes since the start of the hour, 0...59.
    public var minutes: UInt8
    /// Seconds since the start of the minute, 0...59.
    public var seconds: UInt8

    /// The characteristic UUID (0x2A08).
    public static let uuid = BluetoothUUID(0x2A08)

    /// Creates a date and time from its fields.
    public init(year: UInt16, month: UInt8, day: UInt8, hours: UInt8 = 0, minutes: UInt8 = 0, seconds: UInt8 = 0) {
        self.year = year
        self.month = month
        self.day = day
        self.hours = hours
        self.minutes = minutes
        self.seconds = seconds
    }

    /// Decodes the 7 bytes; throws ``WireError`` (truncated) when fewer remain and (invalid value) when the month,
    /// day, hours, minutes or seconds are out of range. A year outside 1582...9999 is kept as sent.
    public init(from reader: inout ByteReader) throws(WireError) {
        year = try reader.readUInt16("Date Time year")
        month = try reader.readUInt8("Date Time month")
        day = try reader.readUInt8("Date Time day")
        hours = try reader.readUInt8("Date Time hours")
        minutes = try reader.readUInt8("Date Time minutes")
        seconds = try reader.readUInt8("Date Time seconds")
        guard month <= 12, day <= 31, hours <= 23, minutes <= 59, seconds <= 59 else {
            throw WireError(.invalidValue, "Date Time \(self) has a field out of range")
        }
    }

    /// Appends the 7 bytes.
    public func encode(into writer: inout ByteWriter) {
        writer.write(year)
        writer.write(month)
        writer.write(day)
        writer.write(hours)
        writer.write(minutes)
        writer.write(seconds)
    }

    /// The date and time as `YYYY-MM-DD hh:mm:ss`.
    public var description: String {
        func two(_ v: UInt8) -> String { v < 10 ? "0\(v)" : "\(v)" }
        let y = String(year)
        return String(repeating: "0", count: max(0, 4 - y.count)) + y + "-\(two(month))-\(two(day)) \(two(hours)):\(two(minutes)):\(two(seconds))"
    }

    /// This date and time `seconds` later (months of 28...31 days, leap years; a date with an unknown year, month
    /// or day only moves its time of day).
    public func adding(seconds added: Int) -> DateTime {
        var result = self
        var total = Int(hours) * 3600 + Int(minutes) * 60 + Int(seconds) + added
        var days = total >= 0 ? total / 86_400 : (total - 86_399) / 86_400
        total -= days * 86_400
        result.hours = UInt8(total / 3600)
        result.minutes = UInt8(total / 60 % 60)
        result.seconds = UInt8(total % 60)
        guard year != 0, (1...12).contains(month), day != 0 else { return result }
        while days > 0 {
            let length = DateTime.daysIn(month: result.month, year: result.year)
            if result.day < length { result.day += 1 } else {
                result.day = 1
                if result.month == 12 { result.month = 1; result.year &+= 1 } else { result.month += 1 }
            }
            days -= 1
        }
        while days < 0 {
            if result.day > 1 { result.day -= 1 } else {
                if result.month == 1 { result.month = 12; result.year &-= 1 } else { result.month -= 1 }
                result.day = DateTime.daysIn(month: result.month, year: result.year)
            }
            days += 1
        }
        return result
    }

    static func daysIn(month: UInt8, year: UInt16) -> UInt8 {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }
}
