import CanopyRequestStore

/// The versioned files of `migrations/`, as Flyway's baselines arrange them:
///
/// - `baseline/NNNN_baseline.sql`: what every file up to NNNN built that
///   holds data, squashed, for a new database;
/// - `archive/`: those older files as they were applied, read only to bring
///   a database that applied some of them up to date (and to check their
///   checksums);
/// - `NNNN_name.sql`: every versioned change after the baseline.
///
/// The code (functions, triggers, policies) is not here: it lives in the
/// repeatable files of `sql/` (``RepeatableFile``).
public struct MigrationLayout: Sendable {
    public let baseline: MigrationFile?
    public let archive: [MigrationFile]
    public let versioned: [MigrationFile]

    public init(directory: String) throws {
        let baselines = try MigrationFile.load(directory: "\(directory)/baseline", required: false)
        guard baselines.count <= 1 else {
            throw StoreError(.invalidInput, "\(directory)/baseline holds \(baselines.count) files; keep one")
        }
        baseline = baselines.first
        archive = try MigrationFile.load(directory: "\(directory)/archive", required: false)
        versioned = try MigrationFile.load(directory: directory)
        if !archive.isEmpty && baseline == nil {
            throw StoreError(.invalidInput, "\(directory)/archive needs a baseline in \(directory)/baseline that new databases apply instead")
        }
        if let baseline {
            if let late = archive.first(where: { $0.version > baseline.version }) {
                throw StoreError(.invalidInput, "archive/\(late.name) is numbered after the baseline \(baseline.name); the baseline must cover every archived file")
            }
            if let early = versioned.first(where: { $0.version <= baseline.version }) {
                throw StoreError(.invalidInput, "\(early.name) is numbered at or below the baseline \(baseline.name); number it \(String(format: "%04d", nextVersion)) or above")
            }
        }
    }

    /// Every versioned file, in the order `status` lists them.
    public var all: [MigrationFile] {
        archive + (baseline.map { [$0] } ?? []) + versioned
    }

    /// The number a new file takes.
    public var nextVersion: Int {
        (all.map(\.version).max() ?? 0) + 1
    }
}
