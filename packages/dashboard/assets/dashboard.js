// @loom/dashboard page script: live updates, the time toggle and a confirmation on dangerous buttons.
// Served as a file (the Content-Security-Policy allows no inline script); no framework, no build.
(function () {
  'use strict';

  // Buttons whose form says data-confirm ask first.
  document.addEventListener('submit', function (event) {
    var form = event.target;
    if (form instanceof HTMLFormElement && form.dataset.confirm && !window.confirm(form.dataset.confirm)) event.preventDefault();
  });

  // Bulk selection on a job list: the header box ticks every row of the page; the bar says how many
  // are ticked. Ticks survive a live swap of the list (restored by job id).
  function selectedCount() {
    var label = document.querySelector('[data-test="selected-count"]');
    if (!label) return;
    var n = document.querySelectorAll('input[data-select]:checked').length;
    label.textContent = n > 0 ? n + ' selected' : 'Selected';
  }
  document.addEventListener('change', function (event) {
    var box = event.target;
    if (!(box instanceof HTMLInputElement)) return;
    if (box.hasAttribute('data-select-all')) {
      document.querySelectorAll('input[data-select]').forEach(function (row) {
        row.checked = box.checked;
      });
    }
    if (box.hasAttribute('data-select') || box.hasAttribute('data-select-all')) selectedCount();
  });
  // Boxes marked data-keep (the cancel form's "also cancel its children") survive a swap too, by name.
  function ticked(root) {
    var ids = {};
    root.querySelectorAll('input[data-select]:checked').forEach(function (row) {
      ids[row.value] = true;
    });
    var kept = {};
    root.querySelectorAll('input[data-keep]:checked').forEach(function (box) {
      kept[box.name] = true;
    });
    var all = root.querySelector('input[data-select-all]');
    return { ids: ids, kept: kept, all: !!(all && all.checked) };
  }
  function retick(root, state) {
    root.querySelectorAll('input[data-select]').forEach(function (row) {
      if (state.ids[row.value]) row.checked = true;
    });
    root.querySelectorAll('input[data-keep]').forEach(function (box) {
      if (state.kept[box.name]) box.checked = true;
    });
    var all = root.querySelector('input[data-select-all]');
    if (all) all.checked = state.all;
    selectedCount();
  }

  // Times: every time[data-when] reads relative (as the server wrote it), in UTC or in this
  // browser's local time, as the header's toggle says; the choice is kept in localStorage and
  // applied again to the parts a live update swaps in.
  var TIME_KEY = 'loom.times';
  var timeMode = 'relative';
  try {
    timeMode = window.localStorage.getItem(TIME_KEY) || 'relative';
  } catch {
    /* storage refused: relative */
  }
  if (timeMode !== 'utc' && timeMode !== 'local') timeMode = 'relative';
  function pad(n, width) {
    var s = String(n);
    while (s.length < (width || 2)) s = '0' + s;
    return s;
  }
  function dateText(d, local) {
    var parts = local
      ? [d.getFullYear(), d.getMonth() + 1, d.getDate(), d.getHours(), d.getMinutes(), d.getSeconds()]
      : [d.getUTCFullYear(), d.getUTCMonth() + 1, d.getUTCDate(), d.getUTCHours(), d.getUTCMinutes(), d.getUTCSeconds()];
    return parts[0] + '-' + pad(parts[1]) + '-' + pad(parts[2]) + ' ' + pad(parts[3]) + ':' + pad(parts[4]) + ':' + pad(parts[5]);
  }
  function zone(d) {
    var offset = -d.getTimezoneOffset();
    var abs = Math.abs(offset);
    return 'UTC' + (offset < 0 ? '−' : '+') + pad(Math.floor(abs / 60)) + ':' + pad(abs % 60);
  }
  function showTimes(root) {
    root.querySelectorAll('time[data-when]').forEach(function (t) {
      if (t.dataset.served === undefined) {
        t.dataset.served = t.textContent;
        t.dataset.servedTitle = t.getAttribute('title') || '';
      }
      var d = new Date(t.getAttribute('datetime'));
      if (isNaN(d.getTime())) return;
      var kind = t.dataset.when;
      var text = t.dataset.served;
      var title = t.dataset.servedTitle;
      if (timeMode === 'local') {
        var full = dateText(d, true);
        text = kind === 'clock' ? full.slice(11) + '.' + pad(d.getMilliseconds(), 3) : full;
        title = full + ' ' + zone(d) + (kind === 'date' ? '' : ' · ' + t.dataset.served);
      } else if (timeMode === 'utc') {
        if (kind !== 'clock' && kind !== 'date') text = dateText(d, false) + ' UTC';
        title = kind === 'date' || kind === 'clock' ? title : t.dataset.served;
      }
      if (t.textContent !== text) t.textContent = text;
      if (title) t.setAttribute('title', title);
    });
  }
  var toggle = document.getElementById('time-toggle');
  function pressed() {
    if (!toggle) return;
    toggle.querySelectorAll('button[data-time-mode]').forEach(function (b) {
      b.setAttribute('aria-pressed', b.dataset.timeMode === timeMode ? 'true' : 'false');
    });
  }
  if (toggle) {
    toggle.hidden = false;
    toggle.addEventListener('click', function (event) {
      var button = event.target instanceof Element ? event.target.closest('button[data-time-mode]') : null;
      if (!button) return;
      timeMode = button.dataset.timeMode;
      try {
        window.localStorage.setItem(TIME_KEY, timeMode);
      } catch {
        /* not kept: this page only */
      }
      pressed();
      showTimes(document);
      document.body.dataset.times = timeMode;
    });
  }
  // What the server sent for each live part, before times were re-rendered: a live update swaps
  // a part only when the server's HTML for it changed.
  var servedHtml = {};
  document.querySelectorAll('[data-live][id]').forEach(function (part) {
    servedHtml[part.id] = part.innerHTML;
  });
  pressed();
  showTimes(document);
  document.body.dataset.times = timeMode;

  var url = document.body.dataset.events;
  var status = document.getElementById('live-status');
  if (!url || typeof EventSource === 'undefined') return;

  var refreshing = false;
  var again = false;

  // Open <details> (stacks, step results) stay open across a swap: remembered by position.
  function openDetails(root) {
    var open = [];
    root.querySelectorAll('details').forEach(function (d, i) {
      if (d.open) open.push(i);
    });
    return open;
  }
  function reopen(root, open) {
    var all = root.querySelectorAll('details');
    open.forEach(function (i) {
      if (all[i]) all[i].open = true;
    });
  }

  // The server said this page's data changed: fetch the page again and swap each live part whose
  // content differs. The page is the server's escaped HTML, parsed inertly (DOMParser runs no script).
  // The header marks the fetch as a live update: the server then leaves a waiting flash message to
  // the page an action redirects to (an action's own change reaches this page while it unloads).
  function refresh() {
    if (refreshing) {
      again = true;
      return;
    }
    refreshing = true;
    fetch(window.location.href, { headers: { accept: 'text/html', 'x-loom-live-update': '1' }, credentials: 'same-origin', cache: 'no-store' })
      .then(function (res) {
        return res.ok ? res.text() : null;
      })
      .then(function (text) {
        if (text === null) return;
        var doc = new DOMParser().parseFromString(text, 'text/html');
        doc.querySelectorAll('[data-live][id]').forEach(function (fresh) {
          var current = document.getElementById(fresh.id);
          if (!current) return;
          var before = Object.prototype.hasOwnProperty.call(servedHtml, fresh.id) ? servedHtml[fresh.id] : current.innerHTML;
          if (before === fresh.innerHTML) return;
          servedHtml[fresh.id] = fresh.innerHTML;
          var open = openDetails(current);
          var ticks = ticked(current);
          var node = document.importNode(fresh, true);
          current.replaceWith(node);
          reopen(node, open);
          retick(node, ticks);
          showTimes(node);
        });
        document.title = doc.title;
        document.body.dataset.updates = String(Number(document.body.dataset.updates || '0') + 1);
      })
      .catch(function () {
        /* the next change tries again */
      })
      .then(function () {
        refreshing = false;
        if (again) {
          again = false;
          refresh();
        }
      });
  }

  var source = new EventSource(url);
  source.addEventListener('open', function () {
    if (status) status.dataset.state = 'on';
  });
  source.addEventListener('error', function () {
    if (status) status.dataset.state = 'off';
  });
  source.addEventListener('change', refresh);
})();
