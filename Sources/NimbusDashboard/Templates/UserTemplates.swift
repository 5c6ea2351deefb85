/// The users list and a user's page.
enum UserTemplates {
    static let all: [String: String] = ["users": users, "user": user]

    static let users = """
        {{<layout}}{{$body}}
        <p><a href="/dashboard/container?{{cq}}">{{container}}</a></p>
        <h1>Users</h1>
        {{#none}}<p class="muted">Nobody has signed into this container yet.</p>{{/none}}
        <div class="table-wrap"><table id="users"><thead><tr><th scope="col">Account</th><th scope="col">Email</th><th scope="col">User record name</th></tr></thead>
        <tbody>{{#users}}<tr><td><a href="/dashboard/user?{{q}}">{{name}}</a></td><td>{{email}}</td><td><code>{{recordName}}</code></td></tr>{{/users}}</tbody></table></div>
        {{/body}}{{/layout}}
        """

    static let user = """
        {{<layout}}{{$body}}
        <p><a href="/dashboard/users?{{usersQ}}">Users of {{container}}</a></p>
        <h1>{{name}}</h1>
        {{#message}}<p class="notice" role="status">{{message}}</p>{{/message}}
        <p>Email {{email}} · record name <code>{{recordName}}</code></p>
        <form method="post" action="/dashboard/user/discoverable" class="inline">
          <input type="hidden" name="csrf" value="{{csrf}}"><input type="hidden" name="c" value="{{container}}"><input type="hidden" name="u" value="{{recordName}}">
          <input type="checkbox" id="discoverable" name="discoverable" {{#discoverable}}checked{{/discoverable}}>
          <label for="discoverable">Discoverable by the container's other users (email address, record name)</label>
          <button type="submit">Save</button>
        </form>
        <h2>Security roles</h2>
        <p class="muted">Roles the schema declares (<code>CREATE ROLE</code>); the public database's <code>GRANT … TO</code> a role applies to the users holding it, in each environment separately.</p>
        {{#roleEnvironments}}<h3>{{environment}}</h3>
        {{#none}}<p class="muted">The {{environment}} schema declares no roles.</p>{{/none}}
        <ul class="roles">{{#roles}}<li><form method="post" action="/dashboard/user/role" class="inline">
          <input type="hidden" name="csrf" value="{{csrf}}"><input type="hidden" name="c" value="{{container}}"><input type="hidden" name="u" value="{{recordName}}">
          <input type="hidden" name="env" value="{{environment}}"><input type="hidden" name="role" value="{{role}}">
          <code>{{role}}</code> {{#held}}held <input type="hidden" name="grant" value="off"><button type="submit" id="{{id}}" class="danger">Revoke</button>{{/held}}{{^held}}not held <input type="hidden" name="grant" value="on"><button type="submit" id="{{id}}">Grant</button>{{/held}}
        </form></li>{{/roles}}</ul>
        {{/roleEnvironments}}
        <h2>Sessions</h2>
        <div class="table-wrap"><table><thead><tr><th scope="col">Session</th><th scope="col">Device</th><th scope="col">Last seen</th><th scope="col"></th></tr></thead>
        <tbody>{{#sessions}}<tr><td><code>{{id}}</code></td><td>{{device}}</td><td>{{lastSeen}}</td><td>{{#revoked}}revoked{{/revoked}}{{^revoked}}
        <form method="post" action="/dashboard/user/session/revoke" class="inline"><input type="hidden" name="csrf" value="{{csrf}}">
        <input type="hidden" name="c" value="{{container}}"><input type="hidden" name="u" value="{{recordName}}"><input type="hidden" name="session" value="{{id}}">
        <button type="submit" class="danger">Revoke</button></form>{{/revoked}}</td></tr>{{/sessions}}</tbody></table></div>
        {{#privateAccess}}
        <h2>Private database</h2>
        <p class="muted">Every view is written to the audit log.</p>
        <ul>{{#databases}}<li><a href="/dashboard/zones?{{q}}">{{environment}}</a></li>{{/databases}}</ul>
        <h2>Subscriptions (development)</h2>
        <ul>{{#subscriptions}}<li><code>{{id}}</code> {{type}}<pre>{{json}}</pre></li>{{/subscriptions}}</ul>
        <h2>Notification collection (development, first 50)</h2>
        <ul id="notifications">{{#notifications}}<li><pre>{{json}}</pre></li>{{/notifications}}</ul>
        {{/privateAccess}}
        {{^privateAccess}}<p class="muted">This container does not let operators read users' private databases or subscriptions (see the container's page).</p>{{/privateAccess}}
        <h2>Delete the account</h2>
        <form method="post" action="/dashboard/user/delete" class="inline">
          <input type="hidden" name="csrf" value="{{csrf}}"><input type="hidden" name="c" value="{{container}}"><input type="hidden" name="u" value="{{recordName}}">
          <label for="confirm">Type the account name to delete its private databases, sessions and subscriptions</label>
          <input id="confirm" name="confirm" autocomplete="off">
          <button type="submit" class="danger">Delete</button>
        </form>
        {{/body}}{{/layout}}
        """
}
