// @loom/dashboard page script: live updates and a confirmation on dangerous buttons.
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
  function refresh() {
    if (refreshing) {
      again = true;
      return;
    }
    refreshing = true;
    fetch(window.location.href, { headers: { accept: 'text/html' }, credentials: 'same-origin', cache: 'no-store' })
      .then(function (res) {
        return res.ok ? res.text() : null;
      })
      .then(function (text) {
        if (text === null) return;
        var doc = new DOMParser().parseFromString(text, 'text/html');
        doc.querySelectorAll('[data-live][id]').forEach(function (fresh) {
          var current = document.getElementById(fresh.id);
          if (!current || current.innerHTML === fresh.innerHTML) return;
          var open = openDetails(current);
          var ticks = ticked(current);
          var node = document.importNode(fresh, true);
          current.replaceWith(node);
          reopen(node, open);
          retick(node, ticks);
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
