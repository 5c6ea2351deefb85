import Foundation
import HTTPTypes
import Hummingbird
import Logging
import Mustache
import NimbusProtocol
import NimbusServer
import NimbusStore
import NIOCore

/// The dashboard's Mustache templates, compiled into the binary: a layout and one template
/// per page. `{{value}}` escapes HTML (`<`, `>`, `&`, `"`, `'`); no template uses the
/// unescaped forms.
struct Templates: Sendable {
    let library: MustacheLibrary

    /// Every template of the dashboard; a template that does not parse stops the process at
    /// start-up (a programming error, caught by the tests).
    static let standard: Templates = {
        var library = MustacheLibrary()
        let sources = LayoutTemplates.all.merging(ContainerTemplates.all) { $1 }
            .merging(DataTemplates.all) { $1 }
            .merging(SchemaTemplates.all) { $1 }
            .merging(LiveTemplates.all) { $1 }
            .merging(UserTemplates.all) { $1 }
            .merging(TraceTemplates.all) { $1 }
        for (name, text) in sources {
            do {
                try library.register(text, named: name)
            } catch {
                fatalError("dashboard template \(name) does not parse: \(error)")
            }
        }
        return Templates(library: library)
    }()

    /// `template` rendered with `values`, inside the layout.
    func render(_ template: String, _ values: [String: Any]) -> String {
        library.render(values, withTemplate: template) ?? "template \(template) is missing"
    }
}
