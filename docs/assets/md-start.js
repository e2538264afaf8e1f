// Material for MkDocs' start-up helpers (its partials/javascripts/base.html), as a file so that the
// pages run no inline script. The scope is the site's root: this file sits at <root>/assets/.
__md_scope = new URL("..", document.currentScript.src);
__md_hash = e => [...e].reduce((e, _) => (e << 5) - e + _.charCodeAt(0), 0);
__md_get = (e, _ = localStorage, t = __md_scope) => JSON.parse(_.getItem(t.pathname + "." + e));
__md_set = (e, _, t = localStorage, a = __md_scope) => { try { t.setItem(a.pathname + "." + e, JSON.stringify(_)); } catch (e) {} };
