<?php
$prefs = unserialize($_COOKIE['prefs'], ['allowed_classes' => false]);
if (!is_array($prefs)) {
    $prefs = [];
}
echo json_encode($prefs);
