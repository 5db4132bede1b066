#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import BLEProtocols
import BLEWire
import Foundation
import Synchronization

/// A bond store kept in one JSON file, shared by every process that opens the same path (a host and the
/// `ble bonds` command, say).
///
/// Every call reads the file afresh, so changes another process made are seen at once. A missing file is an empty
/// store; a file that does not decode makes every call throw ``BondStoreErrorCode/corrupt`` (naming the path) and is
/// never overwritten. Writes are atomic: the new contents go to a temporary file in the same directory (mode 0600),
/// which is flushed to disk and renamed over the old file, so a reader sees the old file or the new one, never a
/// mixture. A missing directory is created with mode 0700.
///
/// Calls within one process are serialised. Two processes that change the store at the same moment are not: the
/// last rename wins, and the other change is lost.
///
/// The file is meant to be read by people too (keys are secrets: it is readable by its owner only). Keys are sorted
/// and the text pretty-printed, so that two versions compare line by line; here nested objects are shown on one line:
///
/// ```json
/// {
///   "bonds" : [
///     {
///       "authenticated" : false,
///       "created" : 1790000000.5,
///       "key_size" : 16,
///       "gatt_client" : { "client_supported_features" : 1, "database_hash" : "<32 hex digits>", "service_changed_cccd" : 2 },
///       "local" : { "address" : "C0:11:22:33:44:55", "type" : "random" },
///       "paired_through" : { "address" : "E7:E6:E5:E4:E3:E2", "type" : "random" },
///       "peer" : { "address" : "00:1A:7D:DA:71:13", "type" : "public" },
///       "peer_irk" : "<32 hex digits>",
///       "peer_key" : { "ediv" : 0, "ltk" : "<32 hex digits>", "rand" : "0000000000000000" },
///       "secure_connections" : true
///     }
///   ],
///   "identities" : [
///     { "address" : "C0:11:22:33:44:55", "irk" : "<32 hex digits>", "type" : "random" }
///   ],
///   "version" : 2
/// }
/// ```
///
/// `peer` is the peer's identity address; `paired_through` the address it had on the link it paired on (what it
/// advertised and connected from), absent for bonds made before it was kept; `gatt_client` what this side's GATT
/// server keeps for the peer as a bonded client (``BondedGATTClient``), absent until there is anything. Version 1
/// files (without these two fields) are read as they are, and written as version 2 on the next change. An all-zero
/// `peer_irk` is read as no IRK.
///
/// Keys (`ltk`, `peer_irk`, `peer_csrk`, `irk`) and `database_hash` are 16 octets as 32 hex digits, most significant first; `rand` is
/// 16 hex digits (a JSON number would lose precision); `type` is `"public"`, `"random"` or the HCI address type as
/// a number; `local_key`, `peer_key`, `peer_irk` and `peer_csrk` are absent when the bond has none.
public final class FileBondStore: BondStore {
    /// The path of the JSON file.
    public let path: String

    /// Serialises the calls of this process (each one a read, or a read and a write).
    private let lock = Mutex(())

    /// Files larger than this are not bond files: reading them is refused rather than attempted.
    private static let maximumFileSize = 16 << 20

    /// A store kept in the file at `path`. Nothing is read or created until the first call.
    /// - Parameter path: The JSON file; its directory is created (mode 0700) on the first write if missing.
    public init(path: String) {
        self.path = path
    }

    /// Where bonds are kept unless told otherwise: `$XDG_DATA_HOME/swift-ble/bonds.json` when `XDG_DATA_HOME` is set
    /// to an absolute path, else `$HOME/.local/share/swift-ble/bonds.json` (on Apple platforms
    /// `~/Library/Application Support/swift-ble/bonds.json`).
    public static var defaultPath: String {
        defaultPath(environment: ProcessInfo.processInfo.environment)
    }

    /// ``defaultPath`` as the environment `environment` makes it (`XDG_DATA_HOME` and `HOME` are read; without
    /// `HOME`, the user's home directory from the system).
    public static func defaultPath(environment: [String: String]) -> String {
        if let xdg = environment["XDG_DATA_HOME"], xdg.hasPrefix("/") {
            return joined(xdg, "swift-ble/bonds.json")
        }
        let home = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()
        #if canImport(Darwin)
        return joined(home, "Library/Application Support/swift-ble/bonds.json")
        #else
        return joined(home, ".local/share/swift-ble/bonds.json")
        #endif
    }

    // MARK: BondStore

    public func allBonds() throws(BondStoreError) -> [Bond] {
        try lock.withLock { _ throws(BondStoreError) -> [Bond] in try read().bonds }
    }

    /// Saves `bond`, replacing the bond of the same local identity and peer.
    ///
    /// Throws ``BondStoreErrorCode/corrupt`` without writing when the file does not decode, or when `bond` could
    /// not be read back (a key that does not have 16 octets, a key size outside 7...16, a `created` that is not a
    /// finite number); ``BondStoreErrorCode/io`` when the file cannot be written.
    public func save(_ bond: Bond) throws(BondStoreError) {
        try lock.withLock { _ throws(BondStoreError) in
            try validate(bond)
            var contents = try read()
            contents.bonds.removeAll { $0.local == bond.local && $0.peer == bond.peer }
            contents.bonds.append(bond)
            try write(contents)
        }
    }

    /// Changes the bond of `local` with `peer` in place, reading and writing the file under one lock; returns whether
    /// there was one. `change` must keep the bond's `local` and `peer`. Throws as ``save(_:)`` does.
    @discardableResult
    public func updateBond(local: LEAddress, peer: LEAddress, _ change: (inout Bond) -> Void) throws(BondStoreError) -> Bool {
        try lock.withLock { _ throws(BondStoreError) -> Bool in
            var contents = try read()
            guard let index = contents.bonds.firstIndex(where: { $0.local == local && $0.peer == peer }) else { return false }
            var bond = contents.bonds[index]
            change(&bond)
            guard bond != contents.bonds[index] else { return true }
            try validate(bond)
            contents.bonds[index] = bond
            try write(contents)
            return true
        }
    }

    @discardableResult
    public func removeBonds(peer: LEAddress, local: LEAddress?) throws(BondStoreError) -> Int {
        try lock.withLock { _ throws(BondStoreError) -> Int in
            var contents = try read()
            let before = contents.bonds.count
            contents.bonds.removeAll { $0.peer == peer && (local == nil || $0.local == local) }
            let removed = before - contents.bonds.count
            if removed > 0 { try write(contents) }
            return removed
        }
    }

    public func identityResolvingKey(local: LEAddress) throws(BondStoreError) -> [UInt8]? {
        try lock.withLock { _ throws(BondStoreError) -> [UInt8]? in
            try read().identities.first { $0.local == local }?.key
        }
    }

    /// Stores this side's IRK for the local identity `local`, replacing any other.
    ///
    /// Throws ``BondStoreErrorCode/corrupt`` without writing when the file does not decode or `key` does not have
    /// 16 octets; ``BondStoreErrorCode/io`` when the file cannot be written.
    public func setIdentityResolvingKey(_ key: [UInt8], local: LEAddress) throws(BondStoreError) {
        try lock.withLock { _ throws(BondStoreError) in
            do throws(BondFileProblem) {
                try BondFileRules.checkKey(key, name: "the IRK")
            } catch {
                throw BondStoreError(.corrupt, "\(path): \(error); not saved")
            }
            var contents = try read()
            if let index = contents.identities.firstIndex(where: { $0.local == local }) {
                contents.identities[index].key = key
            } else {
                contents.identities.append(Identity(local: local, key: key))
            }
            try write(contents)
        }
    }

    // MARK: Contents

    /// This side's IRK for one local identity.
    struct Identity {
        var local: LEAddress
        var key: [UInt8]
    }

    /// Everything the file holds (``StoredFile`` is how it is written).
    struct Contents {
        var identities: [Identity] = []
        var bonds: [Bond] = []
    }

    /// Refuses a bond that the file could not hold (so that what is written can be read back).
    private func validate(_ bond: Bond) throws(BondStoreError) {
        let problems = BondFileRules.problems(bond)
        guard problems.isEmpty else {
            let list = problems.map(\.description).joined(separator: ", ")
            throw BondStoreError(.corrupt, "\(path): the bond with \(bond.peer) is not saved: \(list)")
        }
    }

    // MARK: Reading

    /// The store's contents, from the file as it is now.
    private func read() throws(BondStoreError) -> Contents {
        guard let bytes = try readFile() else { return Contents() }
        let file: StoredFile
        do {
            file = try JSONDecoder().decode(StoredFile.self, from: Data(bytes))
        } catch {
            throw BondStoreError(.corrupt, "\(path): not a bond file: \(Self.describe(error))")
        }
        return file.contents
    }

    /// The file's bytes, or `nil` when there is no file.
    private func readFile() throws(BondStoreError) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        if fd < 0 {
            let code = errno
            if code == ENOENT { return nil }
            throw ioError("cannot open", code)
        }
        defer { close(fd) }
        var contents: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = buffer.withUnsafeMutableBytes { posixRead(fd, $0.baseAddress, $0.count) }
            if count < 0 {
                let code = errno
                if code == EINTR { continue }
                throw ioError("cannot read", code)
            }
            if count == 0 { return contents }
            contents.append(contentsOf: buffer.prefix(count))
            guard contents.count <= Self.maximumFileSize else {
                throw BondStoreError(.corrupt, "\(path): not a bond file: larger than \(Self.maximumFileSize) bytes")
            }
        }
    }

    /// A decoding error in a line: where in the file, and what.
    private static func describe(_ error: any Error) -> String {
        guard let error = error as? DecodingError else { return "\(error)" }
        func at(_ context: DecodingError.Context) -> String {
            let path = context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
            return path.isEmpty ? "" : "at \(path): "
        }
        switch error {
        case .dataCorrupted(let context):
            // JSON syntax errors and numbers out of range say what and where in the underlying error.
            let detail = context.underlyingError.map { " (\($0))" } ?? ""
            return at(context) + context.debugDescription + detail
        case .keyNotFound(let key, let context):
            return at(context) + "\"\(key.stringValue)\" is missing"
        case .typeMismatch(_, let context), .valueNotFound(_, let context):
            return at(context) + context.debugDescription
        @unknown default:
            return "\(error)"
        }
    }

    // MARK: Writing

    /// Replaces the file with `contents`, atomically.
    private func write(_ contents: Contents) throws(BondStoreError) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        var bytes: [UInt8]
        do {
            bytes = Array(try encoder.encode(StoredFile(contents)))
        } catch {
            throw BondStoreError(.io, "\(path): cannot encode the bonds: \(error)")
        }
        bytes.append(0x0A)   // a text file ends with a newline

        let (directory, name) = Self.split(path)
        try makeDirectory(directory)
        var template = Array("\(Self.joined(directory, ".\(name).XXXXXX"))".utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { buffer -> Int32 in
            guard let base = buffer.baseAddress else { return -1 }
            return mkstemp(base)   // creates the file with mode 0600
        }
        guard fd >= 0 else { throw ioError("cannot create a temporary file in \(directory)", errno) }
        let temporary = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        var renamed = false
        defer { if !renamed { unlink(temporary) } }

        do throws(BondStoreError) {
            guard fchmod(fd, 0o600) == 0 else { throw ioError("cannot set the mode of \(temporary)", errno) }
            try writeAll(bytes, to: fd, name: temporary)
            guard fsync(fd) == 0 else { throw ioError("cannot flush \(temporary)", errno) }
        } catch {
            close(fd)
            throw error
        }
        guard close(fd) == 0 else { throw ioError("cannot close \(temporary)", errno) }
        guard rename(temporary, path) == 0 else { throw ioError("cannot rename \(temporary) over it", errno) }
        renamed = true
        // Make the rename itself durable; a failure here leaves the new file in place, so it is not reported.
        let directoryFD = open(directory, O_RDONLY | O_CLOEXEC)
        if directoryFD >= 0 {
            _ = fsync(directoryFD)
            close(directoryFD)
        }
    }

    private func writeAll(_ bytes: [UInt8], to fd: Int32, name: String) throws(BondStoreError) {
        var offset = 0
        while offset < bytes.count {
            let count = bytes.withUnsafeBytes { buffer -> Int in
                guard let base = buffer.baseAddress else { return 0 }
                return posixWrite(fd, base + offset, buffer.count - offset)
            }
            if count < 0 {
                let code = errno
                if code == EINTR { continue }
                throw ioError("cannot write \(name)", code)
            }
            offset += count
        }
    }

    /// Creates `directory` and its missing parents with mode 0700; existing directories are left as they are.
    private func makeDirectory(_ directory: String) throws(BondStoreError) {
        var status = stat()
        if stat(directory, &status) == 0 {
            guard status.st_mode & S_IFMT == S_IFDIR else {
                throw BondStoreError(.io, "\(path): cannot create the directory \(directory): a file is in the way")
            }
            return
        }
        let code = errno
        guard code == ENOENT else { throw ioError("cannot inspect the directory \(directory)", code) }
        let (parent, _) = Self.split(directory)
        if parent.utf8.count < directory.utf8.count { try makeDirectory(parent) }
        if mkdir(directory, 0o700) != 0 {
            let code = errno
            // EEXIST: made by someone else meanwhile, or a link to nowhere is in the way.
            guard code == EEXIST, stat(directory, &status) == 0, status.st_mode & S_IFMT == S_IFDIR else {
                throw ioError("cannot create the directory \(directory)", code)
            }
            return
        }
        // The umask may have taken bits away; 0700 is what is wanted, whatever it is.
        guard chmod(directory, 0o700) == 0 else { throw ioError("cannot set the mode of \(directory)", errno) }
    }

    private func ioError(_ what: String, _ code: Int32) -> BondStoreError {
        BondStoreError(.io, "\(path): \(what): \(String(cString: strerror(code)))")
    }

    // MARK: Paths

    /// The directory and the last component of `path` (`"."` for a bare name, `"/"` for one at the root).
    private static func split(_ path: String) -> (directory: String, name: String) {
        guard let slash = path.lastIndex(of: "/") else { return (".", path) }
        let name = String(path[path.index(after: slash)...])
        let directory = String(path[..<slash])
        return (directory.isEmpty ? "/" : directory, name)
    }

    private static func joined(_ directory: String, _ rest: String) -> String {
        var directory = directory
        while directory.count > 1, directory.hasSuffix("/") { directory.removeLast() }
        return directory == "/" ? "/" + rest : directory + "/" + rest
    }
}

// The store has methods named `read` and `write`; these reach the system calls.
private func posixRead(_ fd: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int) -> Int { read(fd, buffer, count) }
private func posixWrite(_ fd: Int32, _ buffer: UnsafeRawPointer, _ count: Int) -> Int { write(fd, buffer, count) }
