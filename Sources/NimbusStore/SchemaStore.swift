import NimbusProtocol

/// The schema of each container environment (``ContainerSchema``), with optimistic versioning.
///
/// The server reads it on requests that save or query records (checking the version on each
/// request, so that a deploy by the `nimbus` CLI takes effect at once) and, in development,
/// extends it just in time. `nimbus schema deploy` writes the production schema.
public protocol SchemaStore: Sendable {
    /// The schema of a container environment and its version; an empty schema at version 0
    /// if it was never written.
    func schema(container: String, environment: ContainerEnvironment) async throws -> VersionedSchema

    /// The current version of a container environment's schema (0 if never written): one
    /// cheap read, for checking that a cached schema is current.
    func schemaVersion(container: String, environment: ContainerEnvironment) async throws -> Int64

    /// Replaces the schema of a container environment if its version is still
    /// `expectedVersion`, and returns the new version (greater than every earlier one).
    ///
    /// In the same transaction the engine brings the index entries in line with the new
    /// schema's ``ContainerSchema/indexLayout``: it removes the entries of indexes the schema
    /// no longer declares and computes (``IndexEntries``) the entries of indexes it adds, for
    /// every record of the type in every database of the container environment.
    ///
    /// - Throws: ``CloudKitError`` CONFLICT when the version moved on (read, merge, retry).
    func updateSchema(
        _ schema: ContainerSchema, container: String, environment: ContainerEnvironment, expectedVersion: Int64
    ) async throws -> Int64
}
