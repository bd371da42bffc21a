package backup

import (
	"bytes"
	"strings"
	"testing"
)

func TestNewClusterFilterKeepsOnlyTheData(t *testing.T) {
	long := "INSERT INTO `t` VALUES " + strings.Repeat("(1,'x'),", 400000) + "(2,'y');\n"
	dump := "-- MariaDB dump 10.19\n" +
		"-- Server version\t10.11.19-MariaDB\n" +
		"CHANGE MASTER TO MASTER_USE_GTID=slave_pos;\n" +
		"SET @MYSQLDUMP_TEMP_LOG_BIN = @@SESSION.SQL_LOG_BIN;\n" +
		"SET @@SESSION.SQL_LOG_BIN= 0;\n" +
		"SET @@GLOBAL.GTID_PURGED=/*!80000 '+'*/ '3E11FA47-71CA-11E1-9E33-C80AA9429562:1-5';\n" +
		"-- Current Database: `mysql`\n" +
		"CREATE DATABASE `mysql`;\n" +
		"USE `mysql`;\n" +
		"INSERT INTO `global_priv` VALUES ('%','root','{}');\n" +
		"-- Current Database: `shop`\n" +
		"CREATE DATABASE `shop`;\n" +
		"USE `shop`;\n" +
		long +
		"DELIMITER ;;\nCREATE PROCEDURE `p`() SELECT 1 ;;\nDELIMITER ;\n" +
		"SET GLOBAL gtid_slave_pos='0-1001-42';\n" +
		"-- Dump completed"
	var out bytes.Buffer
	if err := newClusterFilter(&out, strings.NewReader(dump)); err != nil {
		t.Fatal(err)
	}
	want := "-- MariaDB dump 10.19\n" +
		"-- Server version\t10.11.19-MariaDB\n" +
		"-- Current Database: `shop`\n" +
		"CREATE DATABASE `shop`;\n" +
		"USE `shop`;\n" +
		long +
		"DELIMITER ;;\nCREATE PROCEDURE `p`() SELECT 1 ;;\nDELIMITER ;\n" +
		"-- Dump completed"
	if got := out.String(); got != want {
		t.Fatalf("filtered dump differs: got %d bytes, want %d\n%.400s", len(got), len(want), got)
	}
}
