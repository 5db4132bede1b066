import BLEWire

extension GAPProcedures {
    /// The connection attempt, from its request to its outcome: one case per phase, each with only what that phase
    /// has (swift-nio-ssh's connection states are the model).
    enum Initiation: Sendable {
        /// LE Create Connection is queued or on its way.
        case requested(Requested)
        /// The controller accepted LE Create Connection: it is initiating.
        case initiating(Initiating)

        /// Before the controller initiates.
        struct Requested: Sendable {
            var id: ProcedureID
            var peer: LEAddress
            /// The own address it initiates with, once LE Create Connection is on its way.
            var address: LEAddress?
            /// The application abandoned the attempt: it is cancelled as soon as the controller initiates.
            var abandoned = false
        }

        /// While the controller initiates.
        struct Initiating: Sendable {
            var id: ProcedureID
            var peer: LEAddress
            /// The own address it initiates with.
            var address: LEAddress?
            /// Why the attempt is being cancelled, once it is.
            var cancel: Cancel?
        }

        /// An attempt being cancelled: why, and whether LE Create Connection Cancel is on its way.
        struct Cancel: Sendable {
            /// Abandoned by the application (which wins over a timeout: the caller is told it cancelled), or timed out.
            var abandoned: Bool
            var commandSent = false
        }

        var id: ProcedureID {
            switch self {
            case .requested(let attempt): attempt.id
            case .initiating(let attempt): attempt.id
            }
        }

        var peer: LEAddress {
            switch self {
            case .requested(let attempt): attempt.peer
            case .initiating(let attempt): attempt.peer
            }
        }

        /// Whether the controller is initiating.
        var isInitiating: Bool {
            if case .initiating = self { true } else { false }
        }

        /// The own address it initiates with.
        var address: LEAddress? {
            get {
                switch self {
                case .requested(let attempt): attempt.address
                case .initiating(let attempt): attempt.address
                }
            }
            set {
                switch self {
                case .requested(var attempt):
                    attempt.address = newValue
                    self = .requested(attempt)
                case .initiating(var attempt):
                    attempt.address = newValue
                    self = .initiating(attempt)
                }
            }
        }
    }
}
