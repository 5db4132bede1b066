/// A central's view of the LED piano (see ``LEDPiano``): its key presses as MIDI messages, and its key LEDs.
///
/// ```swift
/// let piano = LEDPianoClient(peripheral: remote)
/// try await piano.sweep(mode: .on)
/// for try await message in try await piano.keyEvents() { print(message) }
/// ```
public final class LEDPianoClient: Sendable {
    /// The piano.
    public let peripheral: RemotePeripheral
    private let finder: CharacteristicFinder

    /// A client of the piano `peripheral` (connected); characteristics are discovered on first use.
    public init(peripheral: RemotePeripheral) {
        self.peripheral = peripheral
        finder = CharacteristicFinder(peripheral: peripheral)
    }

    /// The note-on and note-off messages of the keys played, in order. The stream throws (and ends) when the piano
    /// notifies bytes that are not note messages, and ends when the link goes down.
    public func keyEvents() async throws -> AsyncThrowingStream<MIDIMessage, any Error> {
        let values = try await peripheral.notifications(for: try await finder.characteristic(LEDPiano.keyEvents, in: LEDPiano.keyService))
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: MIDIMessage.self)
        let task = Task {
            do {
                for await value in values {
                    for message in try MIDIMessage.messages(in: value) { continuation.yield(message) }
                }
                continuation.finish()
            } catch {
                continuation.finish(throwing: error)
            }
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }

    /// Sets one key's LED: one LED frame, written with response (returns when the piano accepted it; a refusal
    /// throws its ATT error). Throws ``WireError`` for a key over 0x72 before writing anything.
    public func light(key: UInt8, mode: PianoLEDFrame.Mode = .on) async throws {
        let frame = try PianoLEDFrame(key: key, mode: mode)
        try await write(frame.encoded)
    }

    /// Sets every key's LED, from key 0x00 to 0x72 in order, each write's response awaited before the next write
    /// (so the piano is never sent more than one frame at a time).
    public func sweep(mode: PianoLEDFrame.Mode = .on) async throws {
        for key in 0...PianoLEDFrame.maximumKey { try await light(key: key, mode: mode) }
    }

    /// Writes raw bytes to the LED characteristic, with response (for frames this module does not describe).
    public func write(_ bytes: [UInt8]) async throws {
        let characteristic = try await finder.characteristic(LEDPiano.ledControl, in: LEDPiano.ledService)
        try await peripheral.writeValue(bytes, for: characteristic, type: .withResponse)
    }
}
