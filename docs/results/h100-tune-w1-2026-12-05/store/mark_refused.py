"""One-off: marks the trials of a store that were refused before their start (told FAIL by the earlier build,
with config_problem's message and no engine start) as refused, as the current build keeps them."""
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
rows = db.execute("select t.trial_id from trials t join trial_user_attributes a on a.trial_id = t.trial_id "
                  "where a.key = 'error' and a.value_json like '%(vLLM refuses it)%'").fetchall()
have = {r[0] for r in db.execute("select trial_id from trial_user_attributes where key = 'refused'")}
n = 0
for (trial_id,) in rows:
    if trial_id not in have:
        db.execute("insert into trial_user_attributes (trial_id, key, value_json) values (?, 'refused', 'true')", (trial_id,))
        n += 1
db.commit(); print("marked", n)
